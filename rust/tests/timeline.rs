//! Keys, supersession and validity time, through the engine's public API on a
//! real file: the rule of `store/timeline.rs`, checked end to end.

use _core::{Config, Entry, Error, ListFilter, Memory, NewEntry, Query};

const DAY: i64 = 86_400_000_000;
const T0: i64 = 1_700_000_000_000_000;

fn open(dir: &tempfile::TempDir) -> Memory {
    let mut config = Config::new(dir.path().join("memory.db").to_string_lossy());
    config.flush_ms = 50;
    Memory::open(config).unwrap()
}

fn fact(content: &str, key: &str, day: i64) -> NewEntry {
    NewEntry::new(content).scope("user:1").key(key).at(T0 + day * DAY)
}

fn ask(engine: &Memory, text: &str, at: Option<i64>, all: bool) -> Vec<String> {
    let mut q = Query::new(text, 4096).in_scope("user:1");
    q.now = Some(T0 + 1000 * DAY);
    q.as_of = at;
    q.all_versions = all;
    engine.query(&q).unwrap().into_iter().map(|h| h.entry.content).collect()
}

/// `(content, valid_from day, valid_to day)` of a key's versions, oldest first.
fn timeline(engine: &Memory, key: &str) -> Vec<(String, i64, Option<i64>)> {
    let day = |t: i64| (t - T0) / DAY;
    engine
        .history(key, Some("user:1"))
        .unwrap()
        .into_iter()
        .map(|e: Entry| (e.content.clone(), day(e.valid_from()), e.validity.valid_to.map(day)))
        .collect()
}

#[test]
fn a_new_version_supersedes_the_current_one_and_both_stay() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(&dir);
    let berlin = engine.save(fact("Alice lives in Berlin", "alice.city", 0)).unwrap();
    let paris = engine.save(fact("Alice lives in Paris", "alice.city", 10)).unwrap();
    assert_eq!(ask(&engine, "where does Alice live", None, false), vec!["Alice lives in Paris"]);
    assert_eq!(
        ask(&engine, "where does Alice live", Some(T0 + 5 * DAY), false),
        vec!["Alice lives in Berlin"]
    );
    assert_eq!(ask(&engine, "where does Alice live", None, true).len(), 2);
    assert_eq!(
        timeline(&engine, "alice.city"),
        vec![("Alice lives in Berlin".into(), 0, Some(10)), ("Alice lives in Paris".into(), 10, None)]
    );
    let old = engine.get_many(&[berlin], None).unwrap().remove(0).unwrap().entry;
    assert_eq!(old.validity.superseded_by, Some(paris));
    // Current truth only, by default, in listings and counts too.
    let filter = ListFilter { scopes: Some(vec![Some("user:1".into())]), ..ListFilter::default() };
    assert_eq!(engine.count(&filter).unwrap(), 1);
    assert_eq!(engine.count(&ListFilter { all_versions: true, ..filter.clone() }).unwrap(), 2);
    // Still true after the index is committed and the store reopened.
    engine.close().unwrap();
    let engine = open(&dir);
    assert_eq!(ask(&engine, "where does Alice live", None, false), vec!["Alice lives in Paris"]);
}

#[test]
fn a_late_version_goes_into_the_history_in_time_order() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(&dir);
    engine.save(fact("deadline is 1 May", "falcon.deadline", 0)).unwrap();
    engine.save(fact("deadline is 1 July", "falcon.deadline", 20)).unwrap();
    // Arrives last, but happened in between: it does not replace 1 July.
    engine.save(fact("deadline is 1 June", "falcon.deadline", 10)).unwrap();
    assert_eq!(
        timeline(&engine, "falcon.deadline"),
        vec![
            ("deadline is 1 May".into(), 0, Some(10)),
            ("deadline is 1 June".into(), 10, Some(20)),
            ("deadline is 1 July".into(), 20, None),
        ]
    );
    assert_eq!(ask(&engine, "deadline", None, false), vec!["deadline is 1 July"]);
    assert_eq!(ask(&engine, "deadline", Some(T0 + 15 * DAY), false), vec!["deadline is 1 June"]);
}

#[test]
fn the_same_content_under_its_key_is_the_current_version() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(&dir);
    let first = engine.save_detailed(vec![fact("Alice lives in Berlin", "alice.city", 0)]).unwrap();
    let again = engine.save_detailed(vec![fact("Alice lives in  Berlin", "alice.city", 5)]).unwrap();
    assert_eq!(again, vec![(first[0].0, false)]);
    // Back to an earlier value: a new version, not the old entry.
    engine.save(fact("Alice lives in Paris", "alice.city", 10)).unwrap();
    let back = engine.save_detailed(vec![fact("Alice lives in Berlin", "alice.city", 20)]).unwrap();
    assert!(back[0].1, "a value that returns is a new version");
    assert_eq!(timeline(&engine, "alice.city").len(), 3);
}

#[test]
fn deleting_a_version_gives_its_interval_back() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(&dir);
    engine.save(fact("Alice lives in Berlin", "alice.city", 0)).unwrap();
    let paris = engine.save(fact("Alice lives in Paris", "alice.city", 10)).unwrap();
    engine.delete_many(&[paris]).unwrap();
    assert_eq!(timeline(&engine, "alice.city"), vec![("Alice lives in Berlin".into(), 0, None)]);
    assert_eq!(ask(&engine, "where does Alice live", None, false), vec!["Alice lives in Berlin"]);
    // And the key takes a new version again.
    engine.save(fact("Alice lives in Rome", "alice.city", 30)).unwrap();
    assert_eq!(ask(&engine, "where does Alice live", None, false), vec!["Alice lives in Rome"]);
}

#[test]
fn supersedes_links_a_correction_without_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(&dir);
    let wrong = engine.save(NewEntry::new("the standup is at 9").scope("user:1").at(T0)).unwrap();
    let mut fix = NewEntry::new("the standup is at 10").scope("user:1").at(T0 + DAY);
    fix.supersedes = Some(wrong);
    let right = engine.save(fix.clone()).unwrap();
    assert_eq!(ask(&engine, "standup", None, false), vec!["the standup is at 10"]);
    let ids: Vec<i64> = engine.versions(right).unwrap().iter().map(|e| e.id).collect();
    assert_eq!(ids, vec![wrong, right]);
    assert_eq!(engine.versions(wrong).unwrap().len(), 2);
    // Superseding it again is refused: the correction is what to correct.
    fix.content = "the standup is at 11".into();
    assert!(matches!(engine.save(fix.clone()), Err(Error::InvalidInput(_))));
    // So is reaching into another scope, which says nothing of the entry.
    let mut other = NewEntry::new("x").scope("user:2");
    other.supersedes = Some(right);
    let err = engine.save(other).unwrap_err().to_string();
    assert!(err.contains("no entry"), "{err}");
    assert_eq!(engine.versions(right).unwrap().len(), 2);
}

#[test]
fn a_period_ends_on_its_own_and_bad_intervals_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(&dir);
    let mut closed = NewEntry::new("the office is closed").scope("user:1").at(T0);
    closed.valid_from = Some(T0 + 10 * DAY);
    closed.valid_to = Some(T0 + 24 * DAY);
    engine.save(closed.clone()).unwrap();
    assert!(ask(&engine, "office closed", Some(T0 + 5 * DAY), false).is_empty());
    assert_eq!(ask(&engine, "office closed", Some(T0 + 12 * DAY), false).len(), 1);
    assert!(ask(&engine, "office closed", Some(T0 + 24 * DAY), false).is_empty());
    closed.valid_to = Some(T0 + 10 * DAY);
    assert!(matches!(engine.save(closed), Err(Error::InvalidInput(_))));
}

#[test]
fn a_key_in_one_scope_never_touches_another() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(&dir);
    let a = engine.save(NewEntry::new("Alice lives in Berlin").scope("user:1").key("city").at(T0)).unwrap();
    engine.save(NewEntry::new("Bob lives in Oslo").scope("user:2").key("city").at(T0 + DAY)).unwrap();
    let got = engine.get_many(&[a], None).unwrap().remove(0).unwrap().entry;
    assert_eq!(got.validity.superseded_by, None);
    assert_eq!(got.validity.valid_to, None);
}
