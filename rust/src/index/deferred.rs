//! Bulk saves indexed after they return.
//!
//! A bulk save of this process hands its changes here and returns; the
//! flusher indexes them, so the caller's next call (preparing and writing the
//! next batch) overlaps the indexing. Whoever takes `apply_lock` first applies
//! them before anything else, so a query that follows the log never misses
//! them and never applies them twice.

use super::SearchIndex;
use crate::error::Result;
use crate::store::{Change, Store};

/// The most changes held for the flusher: beyond this they are read back
/// from the log, so memory does not follow a writer that outruns the index.
const HELD_CHANGES: usize = 50_000;

/// Bulk saves waiting to be indexed.
#[derive(Default)]
pub(super) struct Deferred {
    wanted: bool,
    /// Their changes, in log order without a gap, when held; when empty
    /// (and wanted) the log is read instead.
    changes: Vec<Change>,
}

impl Deferred {
    /// Adds a bulk save's changes (empty: read them from the log).
    fn add(&mut self, changes: Vec<Change>) {
        let follows = match (self.changes.last(), changes.first()) {
            (Some(last), Some(first)) => first.seq == last.seq + 1,
            (None, Some(_)) => !self.wanted,
            (_, None) => false,
        };
        if follows && self.changes.len() + changes.len() <= HELD_CHANGES {
            self.changes.extend(changes);
        } else {
            self.changes = Vec::new();
        }
        self.wanted = true;
    }
}

impl SearchIndex {
    /// Leaves a bulk save's `changes` (this process's own, in log order; or
    /// none, for the log to be read) for the flusher or the next caller that
    /// follows the log.
    pub fn defer(&self, changes: Vec<Change>) {
        self.deferred.lock().add(changes);
    }

    /// Whether a bulk save waits to be indexed.
    pub fn has_deferred(&self) -> bool {
        self.deferred.lock().wanted
    }

    /// Indexes the bulk saves that wait, if any, after waiting for any other
    /// thread applying changes (the flusher's round, and `flush` and `close`).
    pub fn catch_up(&self) -> Result<()> {
        let _order = self.apply_lock.lock();
        self.apply_deferred(&self.store)
    }

    /// Indexes the bulk saves that wait: their held changes as given, or
    /// everything the log holds beyond the index, its new segments left for
    /// `merge_pending`.
    /// Callers hold `apply_lock`.
    pub(super) fn apply_deferred(&self, store: &Store) -> Result<()> {
        let Deferred { wanted, changes } = std::mem::take(&mut *self.deferred.lock());
        if !wanted {
            return Ok(());
        }
        let held = (!changes.is_empty()).then_some(changes);
        self.pull_locked(store, held, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::ChangeOp;

    fn changes(seqs: std::ops::RangeInclusive<i64>) -> Vec<Change> {
        seqs.map(|seq| Change { seq, entry_id: seq, op: ChangeOp::Delete, entry: None, vector: None })
            .collect()
    }

    fn held(d: &Deferred) -> Vec<i64> {
        d.changes.iter().map(|c| c.seq).collect()
    }

    #[test]
    fn bulks_that_follow_on_are_held_together() {
        let mut d = Deferred::default();
        d.add(changes(1..=3));
        d.add(changes(4..=5));
        assert!(d.wanted);
        assert_eq!(held(&d), vec![1, 2, 3, 4, 5]);
    }

    #[test]
    fn a_gap_or_a_bulk_left_in_the_log_means_the_log_is_read() {
        let mut d = Deferred::default();
        d.add(changes(1..=3));
        d.add(changes(7..=8)); // another writer's changes between
        assert!(d.wanted && d.changes.is_empty());
        d.add(changes(9..=9)); // still read from the log: it holds 4..=6
        assert!(d.wanted && d.changes.is_empty());

        let mut d = Deferred::default();
        d.add(Vec::new()); // a bulk written a chunk at a time
        d.add(changes(1..=2));
        assert!(d.wanted && d.changes.is_empty());
    }

    #[test]
    fn holding_stops_at_the_cap() {
        let mut d = Deferred::default();
        d.add(changes(1..=(HELD_CHANGES as i64)));
        assert_eq!(d.changes.len(), HELD_CHANGES);
        d.add(changes((HELD_CHANGES as i64 + 1)..=(HELD_CHANGES as i64 + 1)));
        assert!(d.wanted && d.changes.is_empty());
    }
}
