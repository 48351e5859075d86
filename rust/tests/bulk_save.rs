//! `BulkSave`: a batch handed over a chunk at a time, saved in one
//! transaction, whole or not at all.

use std::sync::Arc;

use _core::{BulkSave, Config, Error, ListFilter, Memory, NewEntry, Query};

fn open(dir: &tempfile::TempDir) -> Arc<Memory> {
    Arc::new(Memory::open(Config::new(dir.path().join("memory.db").to_string_lossy())).unwrap())
}

fn chunk(prefix: &str, range: std::ops::Range<usize>) -> Vec<NewEntry> {
    range.map(|i| NewEntry::new(format!("{prefix} item{i} words")).scope("bulk")).collect()
}

fn count(engine: &Memory) -> i64 {
    engine.count(&ListFilter::default()).unwrap()
}

#[test]
fn a_finished_bulk_save_keeps_every_chunk_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(&dir);
    let mut bulk = BulkSave::start(Arc::clone(&engine)).unwrap();
    for range in [0..3000, 3000..6000, 6000..6001] {
        bulk.add(chunk("kept", range)).unwrap();
    }
    let saved = bulk.finish().unwrap();
    assert_eq!(saved.len(), 6001);
    assert!(saved.iter().all(|&(_, created)| created));
    assert!(saved.windows(2).all(|w| w[0].0 < w[1].0), "ids rise in the order given");
    assert_eq!(count(&engine), 6001);
    let hits = engine.query(&Query::new("item6000", 2048)).unwrap();
    assert_eq!(hits.first().map(|h| h.entry.id), Some(saved[6000].0));
}

#[test]
fn a_bulk_save_dropped_before_finish_keeps_nothing_and_lets_the_writer_go() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(&dir);
    let mut bulk = BulkSave::start(Arc::clone(&engine)).unwrap();
    bulk.add(chunk("dropped", 0..3000)).unwrap();
    bulk.add(chunk("dropped", 3000..6000)).unwrap();
    drop(bulk);
    // Waits for the writer, which the rollback lets go.
    engine.save(NewEntry::new("written afterwards")).unwrap();
    assert_eq!(count(&engine), 1);
    assert!(engine.query(&Query::new("dropped", 2048)).unwrap().is_empty());
}

#[test]
fn a_bad_item_in_a_later_chunk_is_named_by_its_place_and_nothing_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(&dir);
    let mut bulk = BulkSave::start(Arc::clone(&engine)).unwrap();
    bulk.add(chunk("bad", 0..10)).unwrap();
    let mut second = chunk("bad", 10..20);
    second[3].content = "   ".to_owned();
    match bulk.add(second) {
        Err(Error::InvalidInput(msg)) => assert!(msg.starts_with("item 13:"), "{msg}"),
        other => panic!("expected InvalidInput, got {other:?}"),
    }
    // The bulk save has ended: nothing more is taken, and nothing was kept.
    assert!(matches!(bulk.add(chunk("bad", 20..30)), Err(Error::InvalidInput(_))));
    assert!(matches!(bulk.finish(), Err(Error::InvalidInput(_))));
    engine.save(NewEntry::new("after the bad item")).unwrap();
    assert_eq!(count(&engine), 1);
}

#[test]
fn a_chunk_that_fails_to_write_fails_the_bulk_save_and_keeps_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(&dir);
    let taken = engine.save(NewEntry::new("already stored")).unwrap();
    let mut bulk = BulkSave::start(Arc::clone(&engine)).unwrap();
    bulk.add(chunk("failing", 0..100)).unwrap();
    let mut restore = NewEntry::new("restored with a taken id");
    restore.id = Some(taken);
    // The writer refuses the chunk after taking it: the refusal comes back
    // from the next call (here the finish), never a commit.
    let outcome = bulk.add(vec![restore]).and_then(|()| bulk.finish().map(drop));
    assert!(matches!(outcome, Err(Error::InvalidInput(_))), "{outcome:?}");
    assert_eq!(count(&engine), 1);
}
