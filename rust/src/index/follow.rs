//! Following the store's change log: `SearchIndex::follow` is the one way the
//! index takes in changes, whether this process wrote them, another process did,
//! or the index is being opened or rebuilt.

use std::collections::HashSet;
use std::sync::atomic::Ordering;

use tantivy::index::{SegmentId, SegmentMeta};
use tantivy::indexer::NoMergePolicy;
use tantivy::Term;

use super::neighbours::Neighbours;
use super::schema::{self, Extra};
use super::segments::{groups_of, CappedMerges};
use super::{commit, merge_groups, reset_writer, tail, SearchIndex, View};
use crate::error::{Error, Result};
use crate::store::{Change, ChangeOp, Store};

/// Changes read from the log at a time, each with its entry (and its session
/// context while indexing): small enough that a page is a small part of a bulk
/// save's peak memory (docs/performance.md, "Memory").
const PAGE: usize = 2_000;
/// Batches at least this large skip the tail and go straight into one commit.
pub const BULK_CHANGES: usize = 1_000;
/// The most changes a caller that must not wait (`Follow::Try`) applies itself:
/// a few other writers' saves, analysed into the tail in well under a
/// millisecond. More wait for a worker.
const NO_WAIT_CHANGES: usize = 64;
/// The most changes of a bulk batch that go into one index commit: fewer
/// commits cost less time and leave fewer segments to merge, but tantivy holds
/// a commit's postings in memory (the trade-off measured is in
/// docs/performance.md, "Bulk saves").
const BULK_COMMIT: usize = 50_000;

/// How a caller wants the index to follow the change log.
pub enum Follow {
    /// Changes this process just wrote. When they directly follow what the
    /// index has, they are applied as given; otherwise another writer got in
    /// between and the log is read from the store.
    Local(Vec<Change>),
    /// Everything the log holds beyond the index, waiting for any thread that
    /// is applying changes. Cheap when nothing is new.
    Wait,
    /// `Wait` after this process's own bulk save: the segments it commits are
    /// left for `merge_pending` to merge (a query that follows another
    /// process's bulk save leaves that to background merges).
    Merged,
    /// For a caller that must not wait: `false`, having applied nothing, when
    /// another thread is applying changes (a bulk save's indexing holds that
    /// for seconds) or when `NO_WAIT_CHANGES` or more wait. It still takes the
    /// locks that guard the view, which are only ever held briefly. An index
    /// whose files are still being checked (or were found damaged) is not
    /// searched by such a caller: `false`.
    Try,
    /// Every change after `applied()` straight into the writer, committed at
    /// once: the bulk path for open and rebuild.
    Commit,
}

impl SearchIndex {
    /// Brings the index up to date with the change log, as `how` says. `true`
    /// unless a `Follow::Try` declined.
    pub fn follow(&self, store: &Store, how: Follow) -> Result<bool> {
        match how {
            Follow::Local(changes) => self.pull(store, Some(changes), false).map(|()| true),
            Follow::Wait | Follow::Merged => {
                if store.head()? > self.applied() {
                    self.pull(store, None, matches!(how, Follow::Merged))?;
                }
                Ok(true)
            }
            Follow::Try => self.try_pull(store),
            Follow::Commit => {
                let _order = self.apply_lock.lock();
                self.commit_log_locked(store).map(|()| true)
            }
        }
    }

    /// `Follow::Commit` for callers that hold `apply_lock`. A commit applies its
    /// deletions to the segments, so it waits for their check first.
    pub(super) fn commit_log_locked(&self, store: &Store) -> Result<()> {
        // Every change is read from the log here, deferred bulks' included.
        drop(std::mem::take(&mut *self.deferred.lock()));
        let changes = store.changes_since(self.applied(), PAGE)?;
        if changes.is_empty() || self.ready_locked(store)? {
            return Ok(());
        }
        let behind = store.head()? - self.applied();
        self.widen(behind, || self.commit_log_from(store, changes))
    }

    /// `commit_log_locked`'s work, from its first page of changes on.
    fn commit_log_from(&self, store: &Store, mut changes: Vec<Change>) -> Result<()> {
        let mut applied = self.applied();
        let mut guard = self.writer.lock();
        let writer = guard.as_mut().ok_or(Error::Closed)?;
        let start = applied;
        let mut neighbours = Neighbours::default();
        loop {
            self.apply_vectors(&changes);
            self.cache_applied(&changes, true);
            for change in &changes {
                if change.op != ChangeOp::Insert {
                    writer.delete_term(Term::from_field_i64(self.fields.id, change.entry_id));
                }
                if let Some(entry) = &change.entry {
                    let extra = neighbours.extra(store, entry)?;
                    writer.add_document(schema::document(&self.fields, entry, &extra))?;
                }
                applied = change.seq;
            }
            if changes.len() < PAGE {
                break;
            }
            changes = store.changes_since(applied, PAGE)?;
        }
        if applied > start {
            log::info!("search index applied changes {} to {applied}", start + 1);
            commit(writer, &self.stamp(applied)?)?;
            let reader = self.reader.read();
            reader.reload()?;
            let committed = View::committed(reader.searcher())?;
            self.view.write().show(committed);
            self.applied.store(applied, Ordering::Release);
        }
        Ok(())
    }

    /// `Follow::Try`.
    fn try_pull(&self, store: &Store) -> Result<bool> {
        if !self.health().is_sound() {
            return Ok(false);
        }
        let behind = store.head()? - self.applied();
        if behind <= 0 {
            return Ok(true);
        }
        if behind >= NO_WAIT_CHANGES as i64 {
            return Ok(false);
        }
        if self.has_deferred() {
            return Ok(false); // a bulk save, which a caller that may wait indexes
        }
        let Some(_order) = self.apply_lock.try_lock() else { return Ok(false) };
        // Read again under the lock: more may have come since `head`.
        let changes = store.changes_since(self.applied(), NO_WAIT_CHANGES)?;
        if changes.len() >= NO_WAIT_CHANGES {
            return Ok(false);
        }
        self.apply(store, changes, &mut Neighbours::default())?;
        Ok(true)
    }

    fn pull(&self, store: &Store, local: Option<Vec<Change>>, merge: bool) -> Result<()> {
        let _order = self.apply_lock.lock();
        self.apply_deferred(store)?;
        self.pull_locked(store, local, merge)
    }

    /// `pull` for callers that hold `apply_lock`.
    pub(super) fn pull_locked(&self, store: &Store, local: Option<Vec<Change>>, merge: bool) -> Result<()> {
        // Damage found: rebuilt from the log now, these changes included,
        // rather than growing a tail that no commit could take.
        let health = self.health();
        if let Some(why) = health.damage() {
            return self.rebuild_locked(store, &health, &why);
        }
        let applied = self.applied();
        let mut neighbours = Neighbours::default();
        match local {
            // Applied as given only when they follow on without a gap: another
            // writer's change, or one this writer logged for another entry (a
            // timeline's neighbour), is in the log alone.
            Some(changes)
                if changes.first().is_some_and(|c| c.seq == applied + 1)
                    && changes.windows(2).all(|w| w[1].seq == w[0].seq + 1) =>
            {
                self.apply(store, changes, &mut neighbours)
            }
            Some(changes) if changes.last().is_some_and(|c| c.seq <= applied) => Ok(()),
            // Read from the log a page at a time, so a long gap (another
            // process's bulk save, or this one's) is never held whole.
            _ => {
                let first = store.changes_since(applied, PAGE)?;
                if first.len() < BULK_CHANGES {
                    return self.apply(store, first, &mut neighbours);
                }
                // A commit reads the segments; a rebuild leaves nothing to pull.
                if self.ready_locked(store)? {
                    return Ok(());
                }
                let behind = store.head()? - applied;
                let before =
                    self.widen(behind, || self.commit_pages(store, first, &mut neighbours, merge))?;
                match before {
                    Some(before) => self.leave_unmerged(before),
                    None => Ok(()),
                }
            }
        }
    }

    /// Writes a bulk of changes from the log into the index a page at a time,
    /// starting with `first`, with the tail, and commits every `BULK_COMMIT`
    /// of them and at the end. Only a page of changes is held at a time. With
    /// `hold`, background merges stop first, and the segments searchable before
    /// the bulk are returned. Callers hold `apply_lock`.
    fn commit_pages(
        &self,
        store: &Store,
        first: Vec<Change>,
        neighbours: &mut Neighbours,
        hold: bool,
    ) -> Result<Option<HashSet<SegmentId>>> {
        let mut guard = self.writer.lock();
        let writer = guard.as_mut().ok_or(Error::Closed)?;
        let before = if hold { Some(hold_merges(writer)?) } else { None };
        let write = || {
            let mut upto = self.write_tail(writer)?;
            let mut page = first;
            let mut uncommitted = 0;
            loop {
                let full = page.len() == PAGE;
                let extras = neighbours.extras(store, &page)?;
                self.apply_vectors(&page);
                self.cache_applied(&page, true);
                upto = self.write_changes(writer, &page, &extras, upto)?;
                uncommitted += page.len();
                if !full {
                    break;
                }
                if uncommitted >= BULK_COMMIT {
                    self.commit_upto(writer, upto)?;
                    uncommitted = 0;
                }
                page = store.changes_since(upto, PAGE)?;
            }
            self.commit_upto(writer, upto)
        };
        let result = write();
        if result.is_err() {
            self.commit_failed.store(true, Ordering::Release);
            reset_writer(&mut guard);
        }
        result.map(|()| before)
    }

    /// Leaves the segments a bulk committed (those not in `before`) for
    /// `merge_pending`, with background merges held off until then. Recorded
    /// under the writer once the bulk is committed, so no merge can take it
    /// before those segments exist.
    fn leave_unmerged(&self, before: HashSet<SegmentId>) -> Result<()> {
        let guard = self.writer.lock();
        let writer = guard.as_ref().ok_or(Error::Closed)?;
        // `widen` may have swapped in a writer that merges in the background.
        writer.set_merge_policy(Box::new(NoMergePolicy));
        // The first unmerged bulk's: a later one's segments are new too.
        self.unmerged.lock().get_or_insert(before);
        Ok(())
    }

    /// Merges the segments this process's bulk saves committed (`Follow::Merged`)
    /// into as few as the segment cap allows, if any wait. Called by the
    /// flusher (after it applies any deferred bulk), so the bulk is searchable,
    /// in several segments, before the merge runs, and by `flush` and `close`.
    /// Only an optimisation: a failure is logged.
    pub fn merge_pending(&self) {
        let Some(before) = self.unmerged.lock().take() else { return };
        if self.health().damage().is_some() {
            return; // the rebuild commits segments of its own
        }
        if let Err(err) = self.merge_new_segments(&before) {
            log::warn!("merging a bulk save's index segments failed: {err}");
        }
    }

    /// Merges the segments committed since `before` into as few as the segment
    /// cap allows (`segments.rs`), then lets background merges resume: a search
    /// over one segment is faster than over several (docs/performance.md,
    /// "Bulk saves"). Holds the writer, not `apply_lock`: no commit can change
    /// the segments meanwhile, and the tail, which names entries by id, stands
    /// over the merged segments as it did over the ones merged away.
    fn merge_new_segments(&self, before: &HashSet<SegmentId>) -> Result<()> {
        let mut guard = self.writer.lock();
        let writer = guard.as_mut().ok_or(Error::Closed)?;
        writer.set_merge_policy(Box::new(CappedMerges::new()));
        let new: Vec<SegmentMeta> = writer
            .index()
            .searchable_segment_metas()?
            .into_iter()
            .filter(|m| !before.contains(&m.id()))
            .collect();
        let groups = groups_of(&new);
        drop(new); // a living segment meta keeps its files from the collection below
        if merge_groups(writer, groups, false)? > 0 {
            // Still holding the writer: a flush cannot commit and trim the tail
            // between this reload and the swap, so the view stays consistent.
            let reader = self.reader.read();
            reader.reload()?;
            let committed = View::committed(reader.searcher())?;
            self.view.write().show(committed);
            drop(reader);
            // The merged-away segments' files, which no searcher holds now.
            writer.garbage_collect_files().wait()?;
        }
        Ok(())
    }

    /// Applies changes that follow `applied()`: a large batch straight into
    /// index commits, a small one into the tail. Callers hold `apply_lock`.
    fn apply(&self, store: &Store, changes: Vec<Change>, neighbours: &mut Neighbours) -> Result<()> {
        let applied = self.applied();
        let changes: Vec<Change> = changes.into_iter().filter(|c| c.seq > applied).collect();
        self.apply_vectors(&changes);
        if changes.len() >= BULK_CHANGES {
            if self.ready_locked(store)? {
                return Ok(()); // rebuilt from the log, these changes included
            }
            // One commit per slice bounds tantivy's indexing arena (and the
            // extras held) by the slice, not by the batch.
            for slice in changes.chunks(BULK_COMMIT) {
                let extras = neighbours.extras(store, slice)?;
                self.cache_applied(slice, true);
                self.commit_with(slice, &extras)?;
            }
            return Ok(());
        }
        let extras = neighbours.extras(store, &changes)?;
        self.cache_applied(&changes, false);
        let mut analyzer = schema::analyzer();
        let prepared: Vec<(Change, Extra, [Vec<String>; tail::SCORED_FIELDS])> = changes
            .into_iter()
            .zip(extras)
            .map(|(c, extra)| {
                let terms = c
                    .entry
                    .as_ref()
                    .map(|e| schema::field_terms(&mut analyzer, e, &extra))
                    .unwrap_or_default();
                (c, extra, terms)
            })
            .collect();
        let Some(last) = prepared.last().map(|(c, _, _)| c.seq) else { return Ok(()) };
        let mut view = self.view.write();
        for (change, extra, terms) in prepared {
            match change.entry {
                Some(entry) => {
                    view.tail.upsert(entry, extra, change.seq, terms, change.op != ChangeOp::Insert);
                }
                None => view.tail.delete(change.entry_id, change.seq),
            }
        }
        self.applied.store(last, Ordering::Release);
        Ok(())
    }
}

/// Stops background merges on `writer` and returns the segments searchable now.
fn hold_merges(writer: &tantivy::IndexWriter<tantivy::TantivyDocument>) -> Result<HashSet<SegmentId>> {
    let before = writer.index().searchable_segment_ids()?.into_iter().collect();
    writer.set_merge_policy(Box::new(NoMergePolicy));
    Ok(before)
}
