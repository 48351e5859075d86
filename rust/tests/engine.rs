//! End-to-end tests of the engine through its public Rust API, on real files.

use _core::render::Order;
use _core::{Config, Error, Hit, ListFilter, Memory, NewEntry, Patch, Query};

const DAY: i64 = 86_400_000_000;
const NOW: i64 = 1_750_000_000_000_000;

fn file_config(dir: &tempfile::TempDir) -> Config {
    let mut config = Config::new(dir.path().join("memory.db").to_string_lossy());
    config.flush_ms = 50;
    config
}

fn query(engine: &Memory, text: &str, scope: Option<&str>) -> Vec<i64> {
    let mut q = Query::new(text, 4096);
    q.now = Some(NOW);
    q.scopes = scope.map(|s| vec![Some(s.to_owned())]);
    engine.query(&q).unwrap().into_iter().map(|h| h.entry.id).collect()
}

#[test]
fn saves_survive_a_restart_with_and_without_a_commit() {
    let dir = tempfile::tempdir().unwrap();
    let first = {
        let engine = Memory::open(file_config(&dir)).unwrap();
        let id = engine.save(NewEntry::new("the deploy failed: missing env var").scope("p")).unwrap();
        engine.close().unwrap();
        id
    };
    let engine = Memory::open(file_config(&dir)).unwrap();
    assert_eq!(query(&engine, "deploy failure", Some("p")), vec![first]);
    let second = engine.save(NewEntry::new("deploy again tomorrow").scope("p")).unwrap();
    // Dropped without close: the tail was never committed to the index.
    std::mem::forget(engine);
    let engine = Memory::open(file_config(&dir)).unwrap();
    let mut ids = query(&engine, "deploy", Some("p"));
    ids.sort_unstable();
    assert_eq!(ids, vec![first, second]);
}

#[test]
fn a_missing_or_garbage_index_is_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let id = {
        let engine = Memory::open(file_config(&dir)).unwrap();
        let id = engine.save(NewEntry::new("rotate the signing keys").scope("ops")).unwrap();
        engine.close().unwrap();
        id
    };
    let index_dir = dir.path().join("memory.db.index");
    for file in std::fs::read_dir(&index_dir).unwrap() {
        std::fs::write(file.unwrap().path(), b"garbage").unwrap();
    }
    let engine = Memory::open(file_config(&dir)).unwrap();
    assert_eq!(query(&engine, "signing keys", Some("ops")), vec![id]);
    engine.close().unwrap();
    std::fs::remove_dir_all(&index_dir).unwrap();
    let engine = Memory::open(file_config(&dir)).unwrap();
    assert_eq!(query(&engine, "signing keys", Some("ops")), vec![id]);
}

/// `config` without the relevance floor, for tests of which entries match.
fn no_floor(mut config: Config) -> Config {
    config.retrieval.min_relevance = 0.0;
    config.retrieval.min_relative_relevance = 0.0;
    config
}

fn keep_duplicates(config: Config) -> Config {
    Config { mmr: _core::config::Mmr { duplicate_similarity: 1.5, ..config.mmr }, ..config }
}

#[test]
fn scopes_are_isolated_in_tail_and_index() {
    let dir = tempfile::tempdir().unwrap();
    // The three entries are identical: keep near duplicates to see all of them.
    let engine = Memory::open(keep_duplicates(file_config(&dir))).unwrap();
    let a = engine.save(NewEntry::new("alpha secret plan").scope("a")).unwrap();
    let b = engine.save(NewEntry::new("alpha secret plan").scope("b")).unwrap();
    let g = engine.save(NewEntry::new("alpha secret plan")).unwrap();
    assert!(a != b && b != g, "duplicates are per scope");
    for round in 0..2 {
        assert_eq!(query(&engine, "alpha plan", Some("a")), vec![a], "round {round}");
        assert_eq!(query(&engine, "alpha plan", Some("b")), vec![b], "round {round}");
        let mut q = Query::new("alpha", 100);
        q.scopes = Some(vec![Some("a".into()), None]);
        let mut ids: Vec<i64> = engine.query(&q).unwrap().iter().map(|h| h.entry.id).collect();
        ids.sort_unstable();
        assert_eq!(ids, vec![a, g]);
        assert_eq!(query(&engine, "alpha", None).len(), 3);
        engine.flush().unwrap();
    }
}

#[test]
fn scores_agree_before_and_after_a_commit() {
    let engine = Memory::open(Config::default()).unwrap();
    for i in 0..20 {
        engine
            .save(NewEntry::new(format!("entry {i} about rust and tantivy {}", "x ".repeat(i))).at(NOW))
            .unwrap();
    }
    let run = || {
        let mut q = Query::new("rust tantivy entry", 100_000);
        q.now = Some(NOW);
        engine.query(&q).unwrap().iter().map(|h| (h.entry.id, h.score)).collect::<Vec<_>>()
    };
    let before = run();
    engine.flush().unwrap();
    let after = run();
    assert_eq!(before.len(), 20);
    let ids = |v: &[(i64, f32)]| v.iter().map(|(id, _)| *id).collect::<Vec<_>>();
    assert_eq!(ids(&before), ids(&after));
    for ((_, s1), (_, s2)) in before.iter().zip(&after) {
        // tantivy stores document lengths in a one-byte lossy code.
        assert!((s1 - s2).abs() / s1 < 0.05, "{s1} vs {s2}");
    }
}

#[test]
fn recency_breaks_ties_but_does_not_bury_strong_old_matches() {
    let engine = Memory::open(keep_duplicates(Config::default())).unwrap();
    let twin = |at| NewEntry { dedupe: false, ..NewEntry::new("postgres migration plan").at(at) };
    let old = engine.save(twin(NOW - 300 * DAY)).unwrap();
    let new = engine.save(twin(NOW - DAY)).unwrap();
    assert_eq!(query(&engine, "postgres migration", None), vec![new, old]);

    let engine = Memory::open(Config::default()).unwrap();
    let strong = engine
        .save(NewEntry::new("kafka consumer lag alert on the billing cluster").at(NOW - 300 * DAY))
        .unwrap();
    let weak = engine.save(NewEntry::new("billing meeting notes").at(NOW)).unwrap();
    for i in 0..30 {
        engine.save(NewEntry::new(format!("filler note {i} about lunch")).at(NOW)).unwrap();
    }
    assert_eq!(query(&engine, "kafka consumer lag billing", None), vec![strong, weak]);
}

#[test]
fn hostile_query_text_is_data() {
    let engine = Memory::open(Config::default()).unwrap();
    let id = engine.save(NewEntry::new("AND OR NOT field title")).unwrap();
    for text in ["AND", "OR", "-x", "field:x", "\"quoted", "(a OR", "[1 TO 2]", "*", "🚀", "", "   "] {
        let hits = engine.query(&Query::new(text, 100)).unwrap();
        assert!(hits.iter().all(|h| h.entry.id == id), "{text:?}");
    }
    assert_eq!(engine.query(&Query::new("field:title", 100)).unwrap().len(), 1);
    let long = "word ".repeat(20_000);
    assert!(engine.query(&Query::new(long, 100)).unwrap().is_empty());
}

#[test]
fn bad_input_is_rejected_and_changes_nothing() {
    let engine = Memory::open(Config::default()).unwrap();
    let bad = [
        NewEntry::new(""),
        NewEntry::new("ok").scope(""),
        NewEntry { metadata: Some("[1]".into()), ..NewEntry::new("ok") },
        NewEntry::new("ok").at(i64::MAX),
    ];
    for entry in bad {
        assert!(matches!(engine.save(entry), Err(Error::InvalidInput(_))));
    }
    let batch = vec![NewEntry::new("fine"), NewEntry::new(" ")];
    match engine.save_many(batch) {
        Err(Error::InvalidInput(msg)) => assert!(msg.starts_with("item 1"), "{msg}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(engine.count(&ListFilter::default()).unwrap(), 0);
    assert!(matches!(engine.query(&Query::new("x", 0)), Err(Error::InvalidInput(_))));
}

#[test]
fn a_closed_engine_refuses_work() {
    let engine = Memory::open(Config::default()).unwrap();
    engine.close().unwrap();
    engine.close().unwrap();
    assert!(matches!(engine.save(NewEntry::new("x")), Err(Error::Closed)));
    assert!(matches!(engine.query(&Query::new("x", 10)), Err(Error::Closed)));
}

#[test]
fn two_engines_on_one_file_see_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let a = Memory::open(file_config(&dir)).unwrap();
    let b = Memory::open(file_config(&dir)).unwrap();
    let x = a.save(NewEntry::new("written by a").scope("s")).unwrap();
    let y = b.save(NewEntry::new("written by b").scope("s")).unwrap();
    let mut seen_by_a = query(&a, "written", Some("s"));
    let mut seen_by_b = query(&b, "written", Some("s"));
    seen_by_a.sort_unstable();
    seen_by_b.sort_unstable();
    assert_eq!(seen_by_a, vec![x, y]);
    assert_eq!(seen_by_b, vec![x, y]);
}

#[test]
fn kept_statements_never_hold_an_old_snapshot() {
    // `a` reads through statements it keeps prepared between `b`'s writes; a
    // statement left unreset would pin its read snapshot and show old rows.
    let dir = tempfile::tempdir().unwrap();
    let a = Memory::open(file_config(&dir)).unwrap();
    let b = Memory::open(file_config(&dir)).unwrap();
    let id = b.save(NewEntry::new("version 0 of the note").scope("s")).unwrap();
    for v in 1..=5 {
        let hits = a.query(&Query::new("note", 100).in_scope("s")).unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].entry.content, format!("version {} of the note", v - 1));
        assert_eq!(a.count(&ListFilter::default()).unwrap(), v);
        b.update(id, Patch { content: Some(format!("version {v} of the note")), ..Patch::default() })
            .unwrap();
        b.save(NewEntry::new(format!("filler {v}")).scope("t")).unwrap();
    }
}

#[test]
fn a_common_word_matches_only_beside_a_rarer_one_in_a_large_store() {
    // Which entries match at all, not how strongly: no relevance floor.
    let engine = Memory::open(no_floor(Config::default())).unwrap();
    let sorted = |mut ids: Vec<i64>| {
        ids.sort_unstable();
        ids
    };
    let small_common = engine.save(NewEntry::new("lorem filler zero").scope("s")).unwrap();
    let small_rare = engine.save(NewEntry::new("lorem quasar").scope("s")).unwrap();
    // A small store: every word makes a match.
    assert_eq!(sorted(query(&engine, "quasar lorem", Some("s"))), vec![small_common, small_rare]);
    let fillers = (0..10_500)
        .map(|i| NewEntry { dedupe: false, ..NewEntry::new(format!("lorem filler {i}")).scope("s") })
        .collect();
    let fillers = engine.save_many(fillers).unwrap();
    engine.flush().unwrap();
    // Now "lorem" is in every entry: it scores only where "quasar" matched,
    // in the committed index and in the tail alike.
    let tail_common = engine.save(NewEntry::new("lorem only here").scope("s")).unwrap();
    let tail_rare = engine.save(NewEntry::new("lorem quasar again").scope("s")).unwrap();
    for scope in [Some("s"), None] {
        assert_eq!(sorted(query(&engine, "quasar lorem", scope)), vec![small_rare, tail_rare]);
    }
    // Alone, a common word still matches; so it does beside a word the store
    // lacks, or one found only in other scopes.
    let alone = query(&engine, "lorem", Some("s"));
    assert!(!alone.is_empty() && alone.contains(&tail_common));
    assert_eq!(query(&engine, "lorem xyzzy", Some("s")), alone);
    engine.save(NewEntry::new("plugh elsewhere").scope("t")).unwrap();
    assert_eq!(query(&engine, "lorem plugh", Some("s")), alone);
    // Below the floor of live entries every word matches again, though the
    // deleted ones are still counted in the index's statistics.
    engine.delete_many(&fillers[..600]).unwrap();
    engine.flush().unwrap();
    assert!(query(&engine, "quasar lorem", Some("s")).len() > 2);
}

#[test]
fn updates_and_deletes_reach_the_index_before_and_after_a_commit() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Memory::open(file_config(&dir)).unwrap();
    let id = engine.save(NewEntry::new("the cache uses redis").scope("s")).unwrap();
    let other = engine.save(NewEntry::new("redis cluster sizing").scope("s")).unwrap();
    for flush in [false, true] {
        if flush {
            engine.flush().unwrap();
        }
        engine
            .update(id, Patch { content: Some("the cache uses memcached".into()), ..Patch::default() })
            .unwrap();
        assert_eq!(query(&engine, "redis", Some("s")), vec![other]);
        assert_eq!(query(&engine, "memcached", Some("s")), vec![id]);
        engine
            .update(id, Patch { content: Some("the cache uses redis".into()), ..Patch::default() })
            .unwrap();
    }
    assert_eq!(engine.delete_many(&[other, 999]).unwrap(), vec![true, false]);
    assert_eq!(query(&engine, "redis", Some("s")), vec![id]);
    engine.flush().unwrap();
    assert_eq!(query(&engine, "redis", Some("s")), vec![id]);
    assert!(matches!(engine.update(other, Patch::default()), Err(Error::NotFound(_))));
    engine.close().unwrap();
    let engine = Memory::open(file_config(&dir)).unwrap();
    assert_eq!(query(&engine, "redis", Some("s")), vec![id]);
}

#[test]
fn a_bulk_save_dedupes_as_single_saves_do() {
    // Large enough for the grouped inserts, with repeats inside a group, across
    // groups, of entries already stored, in other scopes and without dedupe.
    let item = |i: usize| {
        let text = format!("note {}", (i * 7) % 90);
        let entry =
            NewEntry::new(if i.is_multiple_of(11) { format!("  {}  ", text.to_uppercase()) } else { text });
        let entry = entry.scope(if i.is_multiple_of(5) { "b" } else { "a" });
        NewEntry { dedupe: !i.is_multiple_of(13), ..entry }
    };
    let bulk = Memory::open(Config::default()).unwrap();
    let single = Memory::open(Config::default()).unwrap();
    for i in 0..20 {
        bulk.save(item(i)).unwrap();
        single.save(item(i)).unwrap();
    }
    let saved = bulk.save_detailed((20..400).map(item).collect()).unwrap();
    let one_by_one: Vec<(i64, bool)> =
        (20..400).map(|i| single.save_detailed(vec![item(i)]).unwrap()[0]).collect();
    // The same entries are created, and each repeat points at the same earlier one.
    let shape = |saved: &[(i64, bool)]| -> Vec<(usize, bool)> {
        saved
            .iter()
            .map(|&(id, created)| (saved.iter().position(|&(x, _)| x == id).unwrap(), created))
            .collect()
    };
    assert_eq!(shape(&saved), shape(&one_by_one));
    assert_eq!(bulk.count(&ListFilter::default()).unwrap(), single.count(&ListFilter::default()).unwrap());
    let ids: Vec<i64> = saved.iter().map(|&(id, _)| id).collect();
    let contents = |engine: &Memory, ids: &[i64]| -> Vec<String> {
        engine.get_many(ids, None).unwrap().into_iter().map(|h| h.unwrap().entry.content).collect()
    };
    let single_ids: Vec<i64> = one_by_one.iter().map(|&(id, _)| id).collect();
    assert_eq!(contents(&bulk, &ids), contents(&single, &single_ids));
}

#[test]
fn duplicates_return_the_existing_id_within_a_scope() {
    let engine = Memory::open(Config::default()).unwrap();
    let a = engine.save(NewEntry::new("Deploy  failed\n").scope("s")).unwrap();
    assert_eq!(engine.save(NewEntry::new(" Deploy failed").scope("s")).unwrap(), a);
    assert_ne!(engine.save(NewEntry::new("Deploy failed").scope("t")).unwrap(), a);
    // An id asked for twice is found twice.
    assert!(engine.get_many(&[a, a], None).unwrap().iter().all(Option::is_some));
    let forced = engine.save(NewEntry { dedupe: false, ..NewEntry::new("Deploy failed").scope("s") });
    assert_ne!(forced.unwrap(), a);
    assert_eq!(engine.count(&ListFilter::default()).unwrap(), 3);
}

#[test]
fn a_shallower_query_returns_the_head_of_a_deeper_one() {
    // The top-k collector turns most documents down on score alone and reads an
    // entry's id and liveness only for one that could make the heap: ties (the
    // same text at the same time), deleted and expired entries must not change
    // which come first, in the tail or in the committed index.
    let dir = tempfile::tempdir().unwrap();
    let mut config = file_config(&dir);
    config.flush_ms = 3_600_000;
    config.mmr.duplicate_similarity = 2.0; // identical texts stay, and tie
    let engine = Memory::open(no_floor(config)).unwrap();
    let texts = ["alpha", "alpha beta", "alpha beta gamma", "beta alpha alpha"];
    let entries: Vec<NewEntry> = (0..400_i64)
        .map(|i| {
            let mut e = NewEntry {
                dedupe: false,
                ..NewEntry::new(texts[i as usize % 4]).scope("t").at(NOW - (i % 7) * DAY)
            };
            if i % 11 == 0 {
                e.expires_at = Some(NOW - DAY);
            }
            e
        })
        .collect();
    let ids = engine.save_many(entries).unwrap();
    let deleted: Vec<i64> = ids.iter().copied().step_by(13).collect();
    engine.delete_many(&deleted).unwrap();
    let live: Vec<i64> = (0..400).filter(|i| i % 11 != 0 && i % 13 != 0).map(|i| ids[i]).collect();
    let ranked = |depth: usize| {
        let mut q = Query::new("alpha beta", 1_000_000).in_scope("t");
        q.now = Some(NOW);
        q.depth = Some(depth);
        engine.query(&q).unwrap().into_iter().map(|h| h.entry.id).collect::<Vec<i64>>()
    };
    for committed in [false, true] {
        if committed {
            engine.flush().unwrap();
        }
        let all = ranked(1000);
        let mut found = all.clone();
        found.sort_unstable();
        assert_eq!(found, live, "committed {committed}: every live entry, and only those");
        for depth in [1, 2, 7, 30, 100, 299] {
            assert_eq!(ranked(depth), all[..depth], "depth {depth}, committed {committed}");
        }
    }
}

#[test]
fn get_many_of_several_hundred_ids_keeps_order_repeats_and_gaps() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Memory::open(file_config(&dir)).unwrap();
    let ids =
        engine.save_many((0..600).map(|i| NewEntry::new(format!("item {i}")).scope("g")).collect()).unwrap();
    // More ids than one statement takes (256), read in one snapshot: reversed,
    // with repeats and ids that do not exist.
    let mut asked: Vec<i64> = ids.iter().rev().copied().collect();
    asked.extend([ids[3], -1, ids[3], 999_999]);
    let got = engine.get_many(&asked, None).unwrap();
    assert_eq!(got.len(), asked.len());
    for (id, hit) in asked.iter().zip(&got) {
        match ids.iter().position(|x| x == id) {
            Some(i) => assert_eq!(hit.as_ref().map(|h| h.entry.content.clone()), Some(format!("item {i}"))),
            None => assert!(hit.is_none(), "id {id}"),
        }
    }
}

#[test]
fn clear_scope_touches_exactly_one_scope() {
    let engine = Memory::open(Config::default()).unwrap();
    engine.save(NewEntry::new("keep me").scope("a")).unwrap();
    engine.save(NewEntry::new("drop me").scope("b")).unwrap();
    engine.save(NewEntry::new("drop me too").scope("b")).unwrap();
    engine.save(NewEntry::new("global keep")).unwrap();
    assert_eq!(engine.clear_scope("b").unwrap(), 2);
    assert_eq!(engine.clear_scope("b").unwrap(), 0);
    let scopes = engine.scopes(None).unwrap();
    assert_eq!(scopes, vec![(None, 1), (Some("a".into()), 1)]);
    assert!(query(&engine, "drop", None).is_empty());
    assert_eq!(engine.clear_all().unwrap(), 2);
}

#[test]
fn filters_are_applied_inside_the_index() {
    let engine = Memory::open(Config::default()).unwrap();
    let mut ids = Vec::new();
    for i in 0..40_i64 {
        let kind = if i % 2 == 0 { "fact" } else { "note" };
        let mut e = NewEntry::new(format!("shared topic {i}")).at(NOW - i * DAY);
        e.kind = kind.into();
        e.session_id = Some(format!("s{}", i % 4));
        ids.push(engine.save(e).unwrap());
    }
    for flush in [false, true] {
        if flush {
            engine.flush().unwrap();
        }
        let mut q = Query::new("shared topic", 100_000);
        q.now = Some(NOW);
        q.depth = Some(3);
        q.kinds = Some(vec!["fact".into()]);
        q.session_id = Some("s2".into());
        q.since = Some(NOW - 30 * DAY);
        q.until = Some(NOW - 5 * DAY);
        let got: Vec<i64> = engine.query(&q).unwrap().iter().map(|h| h.entry.id).collect();
        // i even, i % 4 == 2, 5 < i <= 30: 6, 10, 14, ... newest first, depth 3.
        assert_eq!(got, vec![ids[6], ids[10], ids[14]]);
    }
}

#[test]
fn list_pages_newest_first() {
    let engine = Memory::open(Config::default()).unwrap();
    let ids: Vec<i64> =
        (0..25).map(|i| engine.save(NewEntry::new(format!("item {i}")).at(NOW + i)).unwrap()).collect();
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = engine.list(&ListFilter::default(), after, 10).unwrap();
        let Some(last) = page.last() else { break };
        after = Some((last.timestamp, last.id));
        seen.extend(page.iter().map(|e| e.id));
    }
    let mut expected = ids.clone();
    expected.reverse();
    assert_eq!(seen, expected);
}

#[test]
fn a_clean_close_leaves_a_mark_that_only_the_next_open_trusts() {
    let dir = tempfile::tempdir().unwrap();
    let config = file_config(&dir);
    let mark = dir.path().join("memory.db.index").join("closed-cleanly");
    let engine = Memory::open(config.clone()).unwrap();
    let first = engine.save(NewEntry::new("marked entry one")).unwrap();
    assert!(!mark.exists());
    engine.close().unwrap();
    assert!(mark.exists(), "a clean close vouches for the index it leaves");

    let engine = Memory::open(config.clone()).unwrap();
    assert!(!mark.exists(), "an open session must not vouch for itself: it may yet crash");
    assert_eq!(query(&engine, "marked", None), vec![first]);
    let second = engine.save(NewEntry::new("marked entry two")).unwrap();
    engine.close().unwrap();
    assert!(mark.exists());

    // A mark naming another commit than the index's is not trusted: the open
    // counts (and finds the index whole).
    std::fs::write(&mark, "999999").unwrap();
    let engine = Memory::open(config).unwrap();
    assert!(!mark.exists());
    let mut found = query(&engine, "marked", None);
    found.sort_unstable();
    assert_eq!(found, vec![first, second]);
}

#[test]
fn a_batch_of_many_chunks_is_saved_whole_and_indexed_whole() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = file_config(&dir);
    config.flush_ms = 3_600_000; // no flush commits beside the bulk's own
    let engine = Memory::open(config).unwrap();
    // Larger than the save chunk (8192), a page of the log (10,000) and the
    // index's commit (50,000), with repeats across chunks and one session
    // running through all of them. 60,300 changes after the 1,000 repeats: six
    // full pages and 300, committed after the fifth page and at the end.
    let n = 61_300;
    let repeats = |i: i64| (10_000..20_000).contains(&i) && i % 10 == 0;
    let batch: Vec<NewEntry> = (0..n)
        .map(|i| {
            let content = if repeats(i) {
                format!("chunked item {}", i - 10_000) // repeats an earlier item
            } else {
                format!("chunked item {i}")
            };
            let at = NOW - (n - i) * 1_000_000;
            NewEntry { session_id: Some("s".into()), ..NewEntry::new(content).scope("c").at(at) }
        })
        .collect();
    let saved = engine.save_detailed(batch).unwrap();
    assert_eq!(saved.len(), n as usize);
    for (i, (id, created)) in saved.iter().enumerate() {
        if repeats(i as i64) {
            assert!(!created, "item {i} repeats item {} and must not be saved twice", i - 10_000);
            assert_eq!(*id, saved[i - 10_000].0);
        } else {
            assert!(created, "item {i}");
        }
    }
    let distinct: std::collections::BTreeSet<i64> = saved.iter().map(|(id, _)| *id).collect();
    assert_eq!(engine.count(&ListFilter::default()).unwrap(), distinct.len() as i64);
    let mut q = Query::new("chunked item", 100_000_000).in_scope("c");
    q.depth = Some(10_000);
    assert_eq!(engine.query(&q).unwrap().len(), 10_000);
    // Indexed after the save returned, by the flusher or that query, whichever
    // came first; the segments of both commits are merged by the flusher after
    // that, and by `flush` at the latest.
    engine.flush().unwrap();
    let meta = std::fs::read_to_string(dir.path().join("memory.db.index").join("meta.json")).unwrap();
    let meta: serde_json::Value = serde_json::from_str(&meta).unwrap();
    assert_eq!(meta["segments"].as_array().map(Vec::len), Some(1), "{meta}");
    // The last entries, read back from the log in the last page, are searchable
    // with their session context, and so is one from the first commit.
    let last = query(&engine, "chunked item 61299", Some("c"));
    assert_eq!(last.first(), Some(&saved[61_299].0));
    let context = query(&engine, "61297 61298", Some("c"));
    assert!(context.contains(&saved[61_299].0));
    assert_eq!(query(&engine, "chunked item 30001", Some("c")).first(), Some(&saved[30_001].0));
}

fn index_segments(dir: &tempfile::TempDir) -> usize {
    let meta = std::fs::read_to_string(dir.path().join("memory.db.index").join("meta.json")).unwrap();
    let meta: serde_json::Value = serde_json::from_str(&meta).unwrap();
    meta["segments"].as_array().map_or(0, Vec::len)
}

#[test]
fn a_bulk_saves_segments_are_merged_by_the_flusher_and_at_close() {
    // 60,000 entries: two index commits (of at most 50,000), so two segments
    // or more until they are merged. The merge runs after the bulk is
    // searchable, on the flusher (every 50 ms here), without a flush.
    let dir = tempfile::tempdir().unwrap();
    let n = 60_000;
    let batch = |tag: &str| -> Vec<NewEntry> {
        (0..n)
            .map(|i| NewEntry::new(format!("{tag} item {i}")).scope("m").at(NOW - (n - i) * 1_000))
            .collect()
    };
    let engine = Memory::open(file_config(&dir)).unwrap();
    let saved = engine.save_detailed(batch("merged")).unwrap();
    assert_eq!(query(&engine, "merged item 59999", Some("m")).first(), Some(&saved[59_999].0));
    assert_eq!(query(&engine, "merged item 7", Some("m")).first(), Some(&saved[7].0));
    let waited = std::time::Instant::now();
    while index_segments(&dir) != 1 {
        assert!(waited.elapsed().as_secs() < 300, "the flusher never merged the bulk's segments");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(query(&engine, "merged item 30001", Some("m")).first(), Some(&saved[30_001].0));
    // A second bulk, closed at once: by the time `close` returns it is indexed
    // and merged (by the flusher's round that the save nudged, or by the close).
    let mut config = file_config(&dir);
    config.flush_ms = 3_600_000; // no flusher round after the nudge's
    drop(engine);
    let engine = Memory::open(config.clone()).unwrap();
    let again = engine.save_detailed(batch("closed")).unwrap();
    engine.close().unwrap();
    assert!(index_segments(&dir) <= 2, "each bulk's segments merged into one");
    let engine = Memory::open(config).unwrap();
    assert_eq!(engine.count(&ListFilter::default()).unwrap(), 2 * n);
    assert_eq!(query(&engine, "closed item 5", Some("m")).first(), Some(&again[5].0));
    assert_eq!(query(&engine, "merged item 5", Some("m")).first(), Some(&saved[5].0));
}

#[test]
fn a_bulk_save_closed_at_once_is_in_the_index_it_leaves() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = file_config(&dir);
    config.flush_ms = 3_600_000;
    for n in [1_500, 9_000] {
        // 1,500 is held for the flusher; 9,000 (more than a save chunk) is read back from the log.
        let engine = Memory::open(config.clone()).unwrap();
        let batch: Vec<NewEntry> = (0..n).map(|i| NewEntry::new(format!("closing item {i}"))).collect();
        engine.save_many(batch).unwrap();
        engine.close().unwrap();
        let index = tantivy::Index::open_in_dir(dir.path().join("memory.db.index")).unwrap();
        let docs = index.reader().unwrap().searcher().num_docs();
        assert_eq!(docs, engine_total(&config), "{n}: the close indexed the bulk, so the next open need not");
    }
}

fn engine_total(config: &Config) -> u64 {
    let engine = Memory::open(config.clone()).unwrap();
    let total = engine.count(&ListFilter::default()).unwrap();
    engine.close().unwrap();
    u64::try_from(total).unwrap()
}

#[test]
fn large_batches_commit_straight_to_the_index_with_the_tail() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = file_config(&dir);
    config.flush_ms = 3_600_000;
    let engine = Memory::open(config.clone()).unwrap();
    let early = engine.save(NewEntry::new("bulk early entry").scope("b")).unwrap();
    let stale = engine.save(NewEntry::new("bulk stale entry").scope("b")).unwrap();
    engine.delete_many(&[stale]).unwrap();
    let batch: Vec<NewEntry> =
        (0..1500).map(|i| NewEntry::new(format!("bulk item {i}")).scope("b")).collect();
    let ids = engine.save_many(batch).unwrap();
    let mut q = Query::new("bulk", 10_000_000).in_scope("b");
    q.depth = Some(10_000);
    let found = |engine: &Memory| {
        let mut got: Vec<i64> = engine.query(&q).unwrap().iter().map(|h| h.entry.id).collect();
        got.sort_unstable();
        got
    };
    let mut expected = ids.clone();
    expected.push(early);
    expected.sort_unstable();
    assert_eq!(found(&engine), expected);
    std::mem::drop(engine);
    let engine = Memory::open(config).unwrap();
    assert_eq!(found(&engine), expected);
}

#[test]
fn an_index_of_an_older_schema_is_rebuilt() {
    use tantivy::schema::{Schema, FAST, INDEXED};
    let dir = tempfile::tempdir().unwrap();
    let session = |text: &str, s: &str| {
        let mut e = NewEntry::new(text).scope("p").at(NOW);
        e.session_id = Some(s.to_owned());
        e
    };
    let (weak_here, weak_there) = {
        let mut config = file_config(&dir);
        config.retrieval.context_weight = 0.0;
        config.retrieval.reply_weight = 0.0;
        let engine = Memory::open(config).unwrap();
        let weak_here = engine.save(session("the kitten is asleep on the sofa", "a")).unwrap();
        engine.save(session("kitten adoption went well, the kitten adoption is done", "a")).unwrap();
        let weak_there = engine.save(session("the kitten is hungry on the sofa", "b")).unwrap();
        engine.close().unwrap();
        (weak_here, weak_there)
    };
    // The same documents and commit point under a schema without `session_key`,
    // as an index written before the session boost would be.
    let index_dir = dir.path().join("memory.db.index");
    let payload = tantivy::Index::open_in_dir(&index_dir).unwrap().load_metas().unwrap().payload;
    std::fs::remove_dir_all(&index_dir).unwrap();
    std::fs::create_dir_all(&index_dir).unwrap();
    let mut builder = Schema::builder();
    let id = builder.add_i64_field("id", INDEXED | FAST);
    builder.add_i64_field("prev", FAST);
    let old = tantivy::Index::create_in_dir(&index_dir, builder.build()).unwrap();
    let mut writer: tantivy::IndexWriter = old.writer_with_num_threads(1, 15_000_000).unwrap();
    for i in 1..=3 {
        writer.add_document(tantivy::doc!(id => i64::from(i))).unwrap();
    }
    let mut commit = writer.prepare_commit().unwrap();
    commit.set_payload(&payload.unwrap());
    commit.commit().unwrap();
    drop(writer);

    // Context and replies off: only the session boost breaks the weak turns' tie.
    let mut config = file_config(&dir);
    config.retrieval.context_weight = 0.0;
    config.retrieval.reply_weight = 0.0;
    let engine = Memory::open(no_floor(config)).unwrap();
    let ids = query(&engine, "kitten adoption", Some("p"));
    assert_eq!(ids.len(), 3);
    let at = |id| ids.iter().position(|&x| x == id).unwrap();
    assert!(at(weak_here) < at(weak_there), "the session boost reads the rebuilt index: {ids:?}");
}

#[test]
fn a_query_that_must_not_wait_declines_a_long_catch_up_and_answers_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let a = Memory::open(file_config(&dir)).unwrap();
    let b = Memory::open(file_config(&dir)).unwrap();
    let ask = |text: &str| {
        let mut q = Query::new(text, 4096).in_scope("s");
        q.now = Some(NOW);
        q
    };
    let ids = |hits: Vec<Hit>| hits.into_iter().map(|h| h.entry.id).collect::<Vec<_>>();

    // A few changes from another writer are applied in place.
    let first = b.save(NewEntry::new("marker0 from b").scope("s")).unwrap();
    let (hits, _) = a.try_query_timed(&ask("marker0")).unwrap().expect("a small catch-up is no wait");
    assert_eq!(ids(hits), vec![first]);

    // A hundred would take a while to analyse: declined, and nothing applied.
    let bulk: Vec<NewEntry> =
        (1..=100).map(|i| NewEntry::new(format!("marker{i} from b")).scope("s")).collect();
    let bulk_ids = b.save_many(bulk).unwrap();
    assert!(a.try_query_timed(&ask("marker100")).unwrap().is_none());
    assert!(a.try_query_timed(&ask("marker100")).unwrap().is_none(), "the decline changed nothing");
    assert!(a.try_context(&ask("marker100"), Order::default()).unwrap().is_none());
    assert_eq!(query(&a, "marker100", Some("s")), vec![bulk_ids[99]]);
    // Caught up by the query that may wait, it answers again.
    let (hits, _) = a.try_query_timed(&ask("marker7")).unwrap().expect("caught up");
    assert_eq!(ids(hits), vec![bulk_ids[6]]);
    let block = a.try_context(&ask("marker7"), Order::default()).unwrap().expect("caught up");
    assert!(block.text.contains("marker7 from b"), "{}", block.text);

    // Invalid input is an error either way.
    assert!(matches!(a.try_query_timed(&Query::new("marker0", 0)), Err(Error::InvalidInput(_))));

    // An in-memory store reads through its writer's one connection: never.
    let memory = Memory::open(Config::new(":memory:")).unwrap();
    memory.save(NewEntry::new("marker0 in memory").scope("s")).unwrap();
    assert!(memory.try_query_timed(&ask("marker0")).unwrap().is_none());
    assert_eq!(query(&memory, "marker0", Some("s")).len(), 1);
}

// --- The index belongs to its database, and damage to it is repaired --------
// (issue 19, findings 1 and 6: `index/identity.rs`, `index/health.rs`)

/// Moves the database at `from` (with its WAL files) over the one at `to`,
/// leaving `to`'s index directory where it is.
fn move_database(from: &std::path::Path, to: &std::path::Path) {
    for suffix in ["", "-wal", "-shm"] {
        let (src, dst) = (format!("{}{suffix}", from.display()), format!("{}{suffix}", to.display()));
        let _ = std::fs::remove_file(&dst);
        if std::path::Path::new(&src).exists() {
            std::fs::rename(&src, &dst).unwrap();
        }
    }
}

fn copy_database(from: &std::path::Path, to: &std::path::Path) {
    for suffix in ["", "-wal", "-shm"] {
        let src = format!("{}{suffix}", from.display());
        if std::path::Path::new(&src).exists() {
            std::fs::copy(&src, format!("{}{suffix}", to.display())).unwrap();
        }
    }
}

/// Every hit of `text` in `scope`, as (id, scope, content).
fn hits_in(engine: &Memory, text: &str, scope: &str) -> Vec<(i64, Option<String>, String)> {
    let mut q = Query::new(text, 1_000_000).in_scope(scope);
    q.now = Some(NOW);
    q.depth = Some(1000);
    engine.query(&q).unwrap().into_iter().map(|h| (h.entry.id, h.entry.scope, h.entry.content)).collect()
}

fn config_at(path: &std::path::Path) -> Config {
    let mut config = Config::new(path.to_string_lossy());
    config.flush_ms = 50;
    config
}

#[test]
fn an_index_left_by_another_database_is_rebuilt_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let (main, other) = (dir.path().join("memory.db"), dir.path().join("fresh.db"));
    // The same 40 texts in both, the scopes alternating the other way round:
    // entry n and change n are the same numbers in both databases.
    for (path, first) in [(&main, "user:alice"), (&other, "user:bob")] {
        let engine = Memory::open(config_at(path)).unwrap();
        for i in 0..40 {
            let scope = if i % 2 == 0 {
                first
            } else if first == "user:alice" {
                "user:bob"
            } else {
                "user:alice"
            };
            engine
                .save(NewEntry::new(format!("shopping list apples item {i}")).scope(scope).at(NOW))
                .unwrap();
        }
        engine.close().unwrap();
    }
    move_database(&other, &main);
    assert!(dir.path().join("memory.db.index").is_dir(), "the old index stays in place");
    let engine = Memory::open(config_at(&main)).unwrap();
    let hits = hits_in(&engine, "shopping list apples", "user:bob");
    let foreign: Vec<_> = hits.iter().filter(|(_, scope, _)| scope.as_deref() != Some("user:bob")).collect();
    assert!(foreign.is_empty(), "hits from another scope: {foreign:?}");
    assert_eq!(hits.len(), 20);
}

#[test]
fn a_backup_restored_over_the_database_rebuilds_its_index() {
    let dir = tempfile::tempdir().unwrap();
    let (main, backup) = (dir.path().join("memory.db"), dir.path().join("backup.db"));
    let engine = Memory::open(config_at(&main)).unwrap();
    let kept = engine.save(NewEntry::new("kept walrus").scope("s").at(NOW)).unwrap();
    engine.close().unwrap();
    drop(engine);
    copy_database(&main, &backup);
    let engine = Memory::open(config_at(&main)).unwrap();
    for i in 0..5 {
        engine.save(NewEntry::new(format!("later walrus {i}")).scope("s").at(NOW)).unwrap();
    }
    engine.close().unwrap();
    drop(engine);
    move_database(&backup, &main);
    // The index has changes the database does not: rebuilt, not trusted.
    let engine = Memory::open(config_at(&main)).unwrap();
    let found: Vec<i64> = hits_in(&engine, "walrus", "s").into_iter().map(|(id, _, _)| id).collect();
    assert_eq!(found, vec![kept]);
}

#[test]
fn an_older_copy_that_took_other_writes_rebuilds_its_index() {
    let dir = tempfile::tempdir().unwrap();
    let (main, copy) = (dir.path().join("memory.db"), dir.path().join("copy.db"));
    let engine = Memory::open(config_at(&main)).unwrap();
    engine.save(NewEntry::new("shared heron").scope("s").at(NOW)).unwrap();
    engine.close().unwrap();
    drop(engine);
    copy_database(&main, &copy);
    // The original goes on with beta, the copy (same id) with gamma: the same
    // entry ids and change numbers, another history.
    for (path, word) in [(&main, "beta"), (&copy, "gamma")] {
        let engine = Memory::open(config_at(path)).unwrap();
        for i in 0..10 {
            engine.save(NewEntry::new(format!("{word} heron {i}")).scope("s").at(NOW)).unwrap();
        }
        engine.close().unwrap();
    }
    move_database(&copy, &main);
    let engine = Memory::open(config_at(&main)).unwrap();
    assert_eq!(hits_in(&engine, "beta", "s"), vec![], "an index of the other history was trusted");
    let gamma = hits_in(&engine, "gamma", "s");
    assert_eq!(gamma.len(), 10);
    assert!(gamma.iter().all(|(_, _, content)| content.starts_with("gamma")), "{gamma:?}");
}

/// A store of 300 entries with known words, closed cleanly, and the words'
/// expected ids in scope "s".
fn damaged_store_fixture(dir: &tempfile::TempDir) -> (Config, Vec<(String, Vec<i64>)>) {
    let config = file_config(dir);
    let engine = Memory::open(config.clone()).unwrap();
    let words = ["amber", "basalt", "cobalt", "dune", "ember", "flint"];
    let mut expected: Vec<(String, Vec<i64>)> = words.iter().map(|w| ((*w).to_owned(), Vec::new())).collect();
    let batch: Vec<NewEntry> = (0..300)
        .map(|i| {
            let text: Vec<&str> =
                words.iter().enumerate().filter(|(j, _)| (i >> j) & 1 == 1).map(|(_, w)| *w).collect();
            NewEntry::new(format!("record{i} {}", text.join(" "))).scope("s").at(NOW - i64::from(i))
        })
        .collect();
    let ids = engine.save_many(batch).unwrap();
    for (i, id) in ids.iter().enumerate() {
        for (j, (_, found)) in expected.iter_mut().enumerate() {
            if (i >> j) & 1 == 1 {
                found.push(*id);
            }
        }
    }
    engine.close().unwrap();
    (config, expected)
}

/// Runs `f` on another thread and fails the test if it has not finished in a
/// minute (a spinning query cannot be stopped, only outlived).
fn within_a_minute<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = send.send(f());
    });
    receive.recv_timeout(std::time::Duration::from_secs(60)).expect("hung (or panicked)")
}

fn segment_files(dir: &tempfile::TempDir, extension: &str) -> Vec<std::path::PathBuf> {
    let index = dir.path().join("memory.db.index");
    let files: Vec<_> = std::fs::read_dir(index)
        .unwrap()
        .map(|f| f.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == extension))
        .collect();
    assert!(!files.is_empty(), "no .{extension} file");
    files
}

/// Flips `count` bytes of each file's body, spread out; the footer (a JSON
/// object with the CRC, in the last 100 bytes or so) is left alone, so that
/// nothing but the checksum tells.
fn flip_bytes(files: &[std::path::PathBuf], count: usize) {
    let mut flipped = 0;
    for file in files {
        let mut bytes = std::fs::read(file).unwrap();
        let body = bytes.len().saturating_sub(256);
        for k in 0..count.min(body) {
            // 7919 is prime: distinct positions for any body under it.
            bytes[(k * 7919 + 13) % body] ^= 0xA5;
            flipped += 1;
        }
        std::fs::write(file, bytes).unwrap();
    }
    assert!(flipped > 0, "files too small to damage: {files:?}");
}

fn assert_damage_is_repaired(damage: impl FnOnce(&tempfile::TempDir)) {
    let dir = tempfile::tempdir().unwrap();
    let (config, expected) = damaged_store_fixture(&dir);
    damage(&dir);
    within_a_minute(move || {
        // Every word, twice over: a second open repairs nothing more.
        for _ in 0..2 {
            let engine = Memory::open(config.clone()).unwrap();
            for (word, ids) in &expected {
                let mut q = Query::new(word.as_str(), 1_000_000).in_scope("s");
                q.now = Some(NOW);
                q.depth = Some(1000);
                let mut found: Vec<i64> = engine.query(&q).unwrap().iter().map(|h| h.entry.id).collect();
                found.sort_unstable();
                assert_eq!(&found, ids, "{word}");
            }
            engine.close().unwrap();
        }
    });
}

#[test]
fn flipped_postings_are_found_by_their_checksum_and_rebuilt() {
    assert_damage_is_repaired(|dir| flip_bytes(&segment_files(dir, "idx"), 64));
}

#[test]
fn flipped_fast_fields_are_rebuilt() {
    assert_damage_is_repaired(|dir| flip_bytes(&segment_files(dir, "fast"), 64));
}

#[test]
fn flipped_terms_are_rebuilt() {
    assert_damage_is_repaired(|dir| flip_bytes(&segment_files(dir, "term"), 64));
}

#[test]
fn truncated_or_garbage_positions_are_rebuilt() {
    assert_damage_is_repaired(|dir| {
        for file in segment_files(dir, "pos") {
            let len = std::fs::metadata(&file).unwrap().len();
            std::fs::OpenOptions::new().write(true).open(&file).unwrap().set_len(len / 2).unwrap();
        }
    });
    assert_damage_is_repaired(|dir| {
        for file in segment_files(dir, "pos") {
            let len = std::fs::metadata(&file).unwrap().len() as usize;
            std::fs::write(&file, (0..len.max(64)).map(|i| (i * 31 % 251) as u8).collect::<Vec<u8>>())
                .unwrap();
        }
    });
}

#[test]
fn a_query_that_must_not_wait_declines_an_index_not_yet_checked() {
    let dir = tempfile::tempdir().unwrap();
    let (config, expected) = damaged_store_fixture(&dir);
    flip_bytes(&segment_files(&dir, "idx"), 64);
    within_a_minute(move || {
        let engine = Memory::open(config).unwrap();
        let mut q = Query::new(expected[0].0.as_str(), 1_000_000).in_scope("s");
        q.now = Some(NOW);
        q.depth = Some(1000);
        // Until the check has passed, never answered in place; once a query
        // that may wait has rebuilt the index, answered again.
        for _ in 0..50 {
            assert!(engine.try_query_timed(&q).unwrap().is_none(), "a damaged index was searched in place");
        }
        assert_eq!(engine.query(&q).unwrap().len(), expected[0].1.len());
        assert!(engine.try_query_timed(&q).unwrap().is_some());
    });
}
// --- end of the index identity and damage block ------------------------------
