//! The entries a query packs, kept in RAM for a store whose reads are dear.
//!
//! A query through a libSQL server otherwise reads every entry it packs from
//! the server, and the server's time grows with the rows: a hundred entries
//! cost it more than the round trip itself. An embedded replica's reads are
//! local, but its connections keep no prepared statement (`store/conn.rs`):
//! libSQL parses each statement twice, and a query's fetch cost as much as the
//! rest of the query. The index follows the change log,
//! and every change it applies carries its entry, so the same changes keep
//! this cache: an insert or update puts the entry, a delete removes it, a
//! rebuild clears it. Entries read from the store for a query are put too,
//! unless a change was applied while they were read (they may predate it).
//!
//! An entry here is never older than what the index reflects. It may be newer
//! (read after another process changed it). On a server, the log's head is
//! then past what the index applied, which the query reads after its entries,
//! and it catches up and answers again. On a replica, a query follows the
//! replica's log before it ranks, and reads entries only from a replica that
//! holds every write of this handle (`store/replica.rs`); an entry another
//! process changed is newer only once a sync brought the change in, which the
//! next query applies. Every packed entry is still checked against the
//! query's filters (`engine/admit.rs`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::entry::Entry;
use crate::store::Change;

/// The most entries kept; beyond it an eighth of them are let go. At a few
/// hundred bytes an entry, a few tens of megabytes.
pub const CAPACITY: usize = 65_536;

pub struct EntryCache {
    entries: Mutex<HashMap<i64, Entry>>,
    /// Counts the batches of changes applied, so that entries read while one
    /// was applied are not put.
    epoch: AtomicU64,
    capacity: usize,
}

impl EntryCache {
    pub fn new(capacity: usize) -> Self {
        Self { entries: Mutex::new(HashMap::new()), epoch: AtomicU64::new(0), capacity: capacity.max(8) }
    }

    /// Read before entries are read from the store, and given back to `fill`.
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// The cached entry of each of `ids`.
    pub fn get_many(&self, ids: &[i64]) -> Vec<Option<Entry>> {
        let entries = self.entries.lock();
        ids.iter().map(|id| entries.get(id).cloned()).collect()
    }

    /// Whether every one of `ids` is cached.
    pub fn holds_all(&self, ids: &[i64]) -> bool {
        let entries = self.entries.lock();
        ids.iter().all(|id| entries.contains_key(id))
    }

    /// Takes in applied changes: their entries as they now are, or their removal.
    pub fn applied(&self, changes: &[Change]) {
        let mut entries = self.entries.lock();
        self.epoch.fetch_add(1, Ordering::AcqRel);
        for change in changes {
            match &change.entry {
                Some(entry) => {
                    make_room(&mut entries, self.capacity);
                    entries.insert(change.entry_id, entry.clone());
                }
                None => {
                    entries.remove(&change.entry_id);
                }
            }
        }
    }

    /// Takes in a bulk of applied changes: their entries are let go, not
    /// copied (a bulk save's or a rebuild's would only push others out).
    pub fn dropped(&self, changes: &[Change]) {
        let mut entries = self.entries.lock();
        self.epoch.fetch_add(1, Ordering::AcqRel);
        for change in changes {
            entries.remove(&change.entry_id);
        }
    }

    /// Forgets everything (the index was rebuilt).
    pub fn clear(&self) {
        let mut entries = self.entries.lock();
        self.epoch.fetch_add(1, Ordering::AcqRel);
        entries.clear();
    }

    /// Puts entries read from the store since `epoch`, unless changes were
    /// applied in between.
    pub fn fill(&self, epoch: u64, read: impl IntoIterator<Item = Entry>) {
        let mut entries = self.entries.lock();
        if self.epoch.load(Ordering::Acquire) != epoch {
            return;
        }
        for entry in read {
            make_room(&mut entries, self.capacity);
            entries.insert(entry.id, entry);
        }
    }

    /// How many entries are cached.
    pub fn held(&self) -> usize {
        self.entries.lock().len()
    }
}

/// Lets an eighth of `entries` go when it is full.
fn make_room(entries: &mut HashMap<i64, Entry>, capacity: usize) {
    if entries.len() < capacity {
        return;
    }
    let gone: Vec<i64> = entries.keys().take(capacity / 8).copied().collect();
    for id in gone {
        entries.remove(&id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::ChangeOp;

    fn entry(id: i64, content: &str) -> Entry {
        crate::entry::sample(id, content)
    }

    fn change(seq: i64, id: i64, entry: Option<Entry>) -> Change {
        let op = if entry.is_some() { ChangeOp::Insert } else { ChangeOp::Delete };
        Change { seq, entry_id: id, op, entry, vector: None }
    }

    #[test]
    fn applied_changes_put_and_remove_entries() {
        let cache = EntryCache::new(100);
        cache.applied(&[change(1, 1, Some(entry(1, "a"))), change(2, 2, Some(entry(2, "b")))]);
        cache.applied(&[change(3, 1, None), change(4, 2, Some(entry(2, "b2")))]);
        let got = cache.get_many(&[1, 2, 3]);
        assert!(got[0].is_none() && got[2].is_none());
        assert_eq!(got[1].as_ref().map(|e| e.content.as_str()), Some("b2"));
        let before = cache.epoch();
        cache.dropped(&[change(5, 2, Some(entry(2, "b3")))]);
        assert!(cache.get_many(&[2])[0].is_none() && cache.epoch() != before);
    }

    #[test]
    fn entries_read_while_a_change_was_applied_are_not_put() {
        let cache = EntryCache::new(100);
        let before = cache.epoch();
        cache.applied(&[change(1, 1, None)]);
        cache.fill(before, [entry(1, "read before the delete was applied")]);
        assert!(cache.get_many(&[1])[0].is_none());
        let now = cache.epoch();
        cache.fill(now, [entry(1, "read after")]);
        assert!(cache.get_many(&[1])[0].is_some());
        cache.clear();
        assert_eq!(cache.held(), 0);
        cache.fill(now, [entry(2, "read before the rebuild")]);
        assert_eq!(cache.held(), 0);
    }

    #[test]
    fn the_cache_stays_within_its_capacity() {
        let cache = EntryCache::new(64);
        cache.fill(cache.epoch(), (0..1000).map(|i| entry(i, "x")));
        assert!(cache.held() <= 64);
        cache.applied(&(0..1000).map(|i| change(i + 1, i, Some(entry(i, "y")))).collect::<Vec<_>>());
        assert!(cache.held() <= 64);
    }
}
