//! The derived search index: tantivy on disk (or in RAM) plus an in-memory tail.
//!
//! The index follows the store's change log. Its commits carry the number of the
//! last change they include, stamped with the database's identity
//! (`identity.rs`), so on open it applies only what it missed; an index the
//! database does not confirm, or whose files are damaged (`health.rs`), is
//! rebuilt from the database (`open.rs`).

mod clean;
mod collect;
pub mod dense;
mod flusher;
mod health;
mod identity;
mod open;
pub mod schema;
mod search;
mod stats;
mod stem;
pub mod tail;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use tantivy::indexer::{LogMergePolicy, NoMergePolicy};
use tantivy::index::SegmentId;
use tantivy::{Index, IndexReader, IndexWriter, Searcher, TantivyDocument, Term};

use collect::SegmentColumns;
use crate::entry::Entry;
use crate::error::{Error, Result};
use crate::store::{Change, ChangeOp, ListFilter, Store};

pub use flusher::Flusher;
pub use search::{Candidate, SearchRequest};
use schema::{Extra, Fields};
use tail::Tail;
use dense::{Dense, Neighbour};
use health::Health;
use identity::Stamp;

const WRITER_MEMORY: usize = 64 * 1024 * 1024;
/// Changes read from the log at a time.
const PAGE: usize = 10_000;
/// Batches at least this large skip the tail and go straight into one commit.
const BULK_CHANGES: usize = 1_000;
/// The most changes a caller that must not wait (`try_sync`) applies itself:
/// a few other writers' saves, analysed into the tail in well under a
/// millisecond. More wait for a worker.
const NO_WAIT_CHANGES: usize = 64;
/// The most changes of a bulk batch that go into one index commit: fewer
/// commits cost less time and leave fewer segments to merge, but tantivy holds
/// a commit's postings in memory (`benchmarks/run.py --sizes 100000`: peak
/// growth 152 MB at 100,000, 136 MB at 50,000).
const BULK_COMMIT: usize = 50_000;

/// A consistent pair: the committed searcher and the tail of newer changes.
struct View {
    searcher: Searcher,
    /// `searcher`'s fast-field columns.
    columns: SegmentColumns,
    tail: Tail,
}

impl View {
    /// The searcher with its columns, opened before the view is locked.
    fn committed(searcher: Searcher) -> Result<(Searcher, SegmentColumns)> {
        let columns = SegmentColumns::open(&searcher)?;
        Ok((searcher, columns))
    }

    fn show(&mut self, (searcher, columns): (Searcher, SegmentColumns)) {
        self.searcher = searcher;
        self.columns = columns;
    }
}

pub struct SearchIndex {
    fields: Fields,
    /// The store this index follows (the one every method's `store` names):
    /// commits read their stamp's nonce from it, and a search that finds the
    /// index damaged rebuilds from it.
    store: Arc<Store>,
    /// The database's id, stamped on every commit.
    database: String,
    /// Replaced, with `writer`, `view` and `health`, by a rebuild.
    reader: RwLock<IndexReader>,
    writer: Mutex<Option<IndexWriter<TantivyDocument>>>,
    view: RwLock<View>,
    /// Entry embeddings; follows the same changes as `view`.
    dense: RwLock<Dense>,
    /// The newest change applied to the view; guarded for writes by `apply_lock`.
    applied: AtomicI64,
    apply_lock: Mutex<()>,
    /// Whether the committed index may be read (`health.rs`).
    health: RwLock<Arc<Health>>,
    /// The directory, when this process owns it (not an in-RAM index).
    dir: Option<PathBuf>,
    /// A commit failed this session: the next open must count, not trust.
    commit_failed: AtomicBool,
}

impl SearchIndex {
    /// Loads every stored vector. Changes after the index's commit are applied
    /// again by the catch-up that follows, which is harmless: each carries the
    /// entry's current state.
    fn load_vectors(&self, store: &Store) -> Result<()> {
        let vectors = store.vectors()?;
        let mut dense = self.dense.write();
        for (entry, vector) in &vectors {
            dense.apply(entry.id, Some(entry), Some(vector));
        }
        Ok(())
    }

    /// The `k` entries whose vectors are nearest `vector` among those `req` admits.
    pub fn nearest(&self, req: &SearchRequest, vector: &[f32], k: usize) -> Vec<Neighbour> {
        self.dense.read().search(req, vector, k)
    }

    /// The unit vector held for `id`.
    pub fn vector(&self, id: i64) -> Option<Vec<f32>> {
        self.dense.read().vector(id).map(<[f32]>::to_vec)
    }

    /// The unit vectors held for `ids` (entries without one are left out).
    pub fn vectors(&self, ids: &[i64]) -> HashMap<i64, Vec<f32>> {
        let dense = self.dense.read();
        ids.iter().filter_map(|&id| Some((id, dense.vector(id)?.to_vec()))).collect()
    }

    /// The dimension of the vectors held, and how many there are.
    pub fn vector_shape(&self) -> (usize, usize) {
        let dense = self.dense.read();
        (dense.dim(), dense.len())
    }

    fn apply_vectors(&self, changes: &[Change]) {
        if changes.iter().all(|c| c.vector.is_none()) && self.dense.read().len() == 0 {
            return;
        }
        let mut dense = self.dense.write();
        for c in changes {
            dense.apply(c.entry_id, c.entry.as_ref(), c.vector.as_deref());
        }
    }

    /// The newest change the index reflects.
    pub fn applied(&self) -> i64 {
        self.applied.load(Ordering::Acquire)
    }

    /// The health of the committed index (`health.rs`).
    fn health(&self) -> Arc<Health> {
        Arc::clone(&self.health.read())
    }

    /// Applies every change after `applied()` straight into the writer and commits:
    /// the bulk path for open and rebuild.
    fn catch_up(&self, store: &Store) -> Result<()> {
        let _order = self.apply_lock.lock();
        self.catch_up_locked(store)
    }

    /// `catch_up` for callers that hold `apply_lock`. A commit applies its
    /// deletions to the segments, so it waits for their check first.
    fn catch_up_locked(&self, store: &Store) -> Result<()> {
        let mut applied = self.applied();
        let mut changes = store.changes_since(applied, PAGE)?;
        if changes.is_empty() || self.ready_locked(store)? {
            return Ok(());
        }
        let mut guard = self.writer.lock();
        let writer = guard.as_mut().ok_or(Error::Closed)?;
        let start = applied;
        let mut neighbours = Neighbours::default();
        loop {
            self.apply_vectors(&changes);
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

    /// Makes the store's newest changes searchable. Cheap when nothing is new.
    pub fn sync(&self, store: &Store) -> Result<()> {
        if store.head()? > self.applied() {
            self.pull(store, None, false)?;
        }
        Ok(())
    }

    /// `sync` for a caller that must not wait: false, having applied nothing,
    /// when another thread is applying changes (a bulk save's indexing holds
    /// that for seconds) or when `NO_WAIT_CHANGES` or more wait. It still takes
    /// the locks that guard the view, which are only ever held briefly.
    /// An index whose files are still being checked (or found damaged) is
    /// not searched by such a caller: false.
    pub fn try_sync(&self, store: &Store) -> Result<bool> {
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
        let Some(_order) = self.apply_lock.try_lock() else { return Ok(false) };
        // Read again under the lock: more may have come since `head`.
        let changes = store.changes_since(self.applied(), NO_WAIT_CHANGES)?;
        if changes.len() >= NO_WAIT_CHANGES {
            return Ok(false);
        }
        self.apply(store, changes, &mut Neighbours::default())?;
        Ok(true)
    }

    /// `sync` after this process's own bulk save: the segments it commits are
    /// merged into one segment before it returns (a query that follows
    /// another process's bulk save leaves that to background merges).
    pub fn sync_merged(&self, store: &Store) -> Result<()> {
        if store.head()? > self.applied() {
            self.pull(store, None, true)?;
        }
        Ok(())
    }

    /// Applies changes that this process just wrote. When they directly follow
    /// what the index has, they are applied as given; otherwise another writer
    /// got in between and the log is read from the store.
    pub fn apply_local(&self, store: &Store, changes: Vec<Change>) -> Result<()> {
        self.pull(store, Some(changes), false)
    }

    fn pull(&self, store: &Store, local: Option<Vec<Change>>, merge: bool) -> Result<()> {
        let _order = self.apply_lock.lock();
        // Damage found: rebuilt from the log now, these changes included,
        // rather than growing a tail that no commit could take.
        let health = self.health();
        if let Some(why) = health.damage() {
            return self.rebuild_locked(store, &health, &why);
        }
        let applied = self.applied();
        let mut neighbours = Neighbours::default();
        match local {
            Some(changes) if changes.first().is_some_and(|c| c.seq == applied + 1) => {
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
                let before_bulk = if merge { Some(self.hold_merges()?) } else { None };
                let pulled = self.commit_pages(store, first, &mut neighbours);
                if let Some(before) = before_bulk {
                    // Only an optimisation: the changes are applied either way.
                    if let Err(err) = self.merge_new_segments(&before) {
                        log::warn!("merging a bulk save's index segments failed: {err}");
                    }
                }
                pulled
            }
        }
    }

    /// Writes a bulk of changes from the log into the index a page at a time,
    /// starting with `first`, with the tail, and commits every `BULK_COMMIT`
    /// of them and at the end. Only a page of changes is held at a time.
    /// Callers hold `apply_lock`.
    fn commit_pages(&self, store: &Store, first: Vec<Change>, neighbours: &mut Neighbours) -> Result<()> {
        let mut guard = self.writer.lock();
        let writer = guard.as_mut().ok_or(Error::Closed)?;
        let write = || {
            let mut upto = self.write_tail(writer)?;
            let mut page = first;
            let mut uncommitted = 0;
            loop {
                let full = page.len() == PAGE;
                let extras = neighbours.extras(store, &page)?;
                self.apply_vectors(&page);
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
        result
    }

    /// Stops background merges while a bulk pull commits page by page, and
    /// returns the segments that were searchable before it.
    fn hold_merges(&self) -> Result<HashSet<SegmentId>> {
        let guard = self.writer.lock();
        let writer = guard.as_ref().ok_or(Error::Closed)?;
        let before = writer.index().searchable_segment_ids()?.into_iter().collect();
        writer.set_merge_policy(Box::new(NoMergePolicy));
        Ok(before)
    }

    /// Merges the segments a bulk pull committed into one, then lets background
    /// merges resume: over the benchmark's 100,000 entries, its queries' median
    /// `search_us` (`explain=True`) was 100 µs in two segments, 77 µs in one.
    fn merge_new_segments(&self, before: &HashSet<SegmentId>) -> Result<()> {
        let mut guard = self.writer.lock();
        let writer = guard.as_mut().ok_or(Error::Closed)?;
        writer.set_merge_policy(Box::new(LogMergePolicy::default()));
        let new: Vec<SegmentId> = writer
            .index()
            .searchable_segment_ids()?
            .into_iter()
            .filter(|id| !before.contains(id))
            .collect();
        if new.len() > 1 {
            writer.merge(&new).wait()?;
            // Still holding the writer: a flush cannot commit and trim the tail
            // between this reload and the swap, so the view stays consistent.
            let reader = self.reader.read();
            reader.reload()?;
            let committed = View::committed(reader.searcher())?;
            self.view.write().show(committed);
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
                self.commit_with(slice, &extras)?;
            }
            return Ok(());
        }
        let extras = neighbours.extras(store, &changes)?;
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

    /// How many changes wait in the tail for a commit.
    pub fn pending(&self) -> usize {
        self.view.read().tail.len()
    }

    /// The bulk path: commits the tail together with `changes` in one index
    /// commit instead of growing the tail. Callers hold `apply_lock`.
    fn commit_with(&self, changes: &[Change], extras: &[Extra]) -> Result<()> {
        let mut guard = self.writer.lock();
        let writer = guard.as_mut().ok_or(Error::Closed)?;
        let result = self.commit_tail(writer, changes, extras);
        if result.is_err() {
            self.commit_failed.store(true, Ordering::Release);
            reset_writer(&mut guard);
        }
        result
    }

    /// The stamp of a commit up to change `upto` (`identity.rs`). An index in
    /// RAM is never reopened: its stamp skips the nonce.
    fn stamp(&self, upto: i64) -> Result<Stamp> {
        match self.dir {
            Some(_) => Stamp::of(&self.store, &self.database, upto),
            None => Ok(Stamp { database: self.database.clone(), seq: upto, nonce: 0 }),
        }
    }

    /// Commits the tail to the index, then drops what the commit made durable.
    /// A commit reads the segments (to apply deletions), so this waits for
    /// their check, and rebuilds a damaged index from the store instead.
    pub fn flush(&self) -> Result<()> {
        self.ready(&self.store)?;
        self.commit_pending()
    }

    /// `flush` for the background flusher: nothing, for now, while the check
    /// runs or after it failed (the tail keeps its changes; the next query,
    /// save or flush that may wait rebuilds a damaged index).
    pub fn flush_if_checked(&self) -> Result<()> {
        if !self.health().is_sound() {
            return Ok(());
        }
        self.commit_pending()
    }

    fn commit_pending(&self) -> Result<()> {
        let mut guard = self.writer.lock();
        let Some(writer) = guard.as_mut() else { return Ok(()) };
        if self.view.read().tail.is_empty() {
            return Ok(());
        }
        let result = self.commit_tail(writer, &[], &[]);
        if result.is_err() {
            self.commit_failed.store(true, Ordering::Release);
            reset_writer(&mut guard);
        }
        result
    }

    /// Writes the tail and then `extra` into the writer and commits them as one.
    fn commit_tail(
        &self,
        writer: &mut IndexWriter<TantivyDocument>,
        extra: &[Change],
        extras: &[Extra],
    ) -> Result<()> {
        let upto = self.write_tail(writer)?;
        let upto = self.write_changes(writer, extra, extras, upto)?;
        self.commit_upto(writer, upto)
    }

    /// Writes the tail's deletions and documents into the writer; returns the
    /// change number they reflect, read under the same lock, so that the
    /// commit's payload and the later trim agree.
    fn write_tail(&self, writer: &mut IndexWriter<TantivyDocument>) -> Result<i64> {
        let view = self.view.read();
        for &id in view.tail.tombstones.keys() {
            writer.delete_term(Term::from_field_i64(self.fields.id, id));
        }
        for doc in view.tail.docs.values() {
            writer.add_document(schema::document(&self.fields, &doc.entry, &doc.extra))?;
        }
        Ok(self.applied())
    }

    /// Writes the changes after `upto` into the writer; returns the last one's number.
    fn write_changes(
        &self,
        writer: &mut IndexWriter<TantivyDocument>,
        changes: &[Change],
        extras: &[Extra],
        upto: i64,
    ) -> Result<i64> {
        for (change, more) in changes.iter().zip(extras).filter(|(c, _)| c.seq > upto) {
            if change.op != ChangeOp::Insert {
                writer.delete_term(Term::from_field_i64(self.fields.id, change.entry_id));
            }
            if let Some(entry) = &change.entry {
                writer.add_document(schema::document(&self.fields, entry, more))?;
            }
        }
        Ok(upto.max(changes.last().map_or(upto, |c| c.seq)))
    }

    /// Commits what was written up to change `upto`, shows it to queries and
    /// drops what it made durable from the tail.
    fn commit_upto(&self, writer: &mut IndexWriter<TantivyDocument>, upto: i64) -> Result<()> {
        commit(writer, &self.stamp(upto)?)?;
        let committed = {
            let reader = self.reader.read();
            reader.reload()?;
            View::committed(reader.searcher())?
        };
        let mut view = self.view.write();
        view.show(committed);
        view.tail.trim(upto);
        // A flush runs beside pulls that may have moved further: never go back.
        self.applied.fetch_max(upto, Ordering::AcqRel);
        Ok(())
    }

    /// Flushes and releases the index writer (and its directory lock). The
    /// flush waits for the files' check; a damaged index is left unflushed and
    /// unmarked, for the next open to rebuild.
    pub fn close(&self) -> Result<()> {
        let sound = self.health().wait().is_ok();
        if sound {
            self.commit_pending()?;
        }
        let Some(writer) = self.writer.lock().take() else { return Ok(()) };
        // Marked while this writer still holds the directory lock, so no other
        // process can have taken the directory over in between. Merges still
        // running keep the payload and every document.
        let marked = match (&self.dir, sound && !self.commit_failed.load(Ordering::Acquire)) {
            (Some(dir), true) => {
                let payload = writer.index().load_metas()?.payload;
                payload.map(|payload| (dir, clean::leave(dir, &payload)))
            }
            _ => None,
        };
        if let Err(err) = writer.wait_merging_threads() {
            if let Some((dir, true)) = marked {
                clean::remove(dir);
            }
            return Err(err.into());
        }
        Ok(())
    }
}

/// Finds each entry's context while a batch of changes is applied in order.
///
/// An entry's context is the text of the previous `schema::CONTEXT_TURNS`
/// entries of its scope and session (by timestamp, then id; within
/// `schema::CONTEXT_WINDOW_US`). Only earlier turns are used, so an entry's
/// context does not change when later turns arrive, and a rebuild reproduces it.
/// They are read from the store, except when the batch itself already holds
/// enough earlier turns of the session: one query per session and batch rather
/// than per entry. That shortcut is exact when a session's timestamps do not go
/// back in save order (the store could otherwise hold an older-id entry with a
/// later timestamp in between).
#[derive(Default)]
struct Neighbours {
    /// (scope, session) -> the batch's latest entries as (ts, id, content).
    recent: HashMap<(Option<String>, String), Vec<(i64, i64, String)>>,
}

/// Batch entries kept per session.
const NEIGHBOURS_KEPT: usize = 8;

impl Neighbours {
    /// The extras of `changes` (a deletion has none), in order.
    fn extras(&mut self, store: &Store, changes: &[Change]) -> Result<Vec<Extra>> {
        changes
            .iter()
            .map(|c| c.entry.as_ref().map_or_else(|| Ok(Extra::default()), |e| self.extra(store, e)))
            .collect()
    }

    fn extra(&mut self, store: &Store, entry: &Entry) -> Result<Extra> {
        let Some(session) = &entry.session_id else { return Ok(Extra::default()) };
        if schema::CONTEXT_TURNS == 0 {
            return Ok(Extra::default());
        }
        let key = (entry.scope.clone(), session.clone());
        let here = (entry.timestamp, entry.id);
        let since = entry.timestamp.saturating_sub(schema::CONTEXT_WINDOW_US);
        let recent = self.recent.entry(key).or_default();
        let mut prior: Vec<&(i64, i64, String)> =
            recent.iter().filter(|(ts, id, _)| (*ts, *id) < here && *ts >= since).collect();
        prior.sort_by_key(|(ts, id, _)| (*ts, *id));
        let (context, prev) = if prior.len() >= schema::CONTEXT_TURNS {
            let from = prior.len() - schema::CONTEXT_TURNS;
            let text = prior[from..].iter().map(|(_, _, c)| c.as_str()).collect::<Vec<_>>().join("\n");
            (text, prior.last().map_or(0, |(_, id, _)| *id))
        } else {
            let filter = ListFilter {
                scope: Some(entry.scope.clone()),
                session_id: Some(session.clone()),
                since: Some(since),
                ..ListFilter::default()
            };
            let previous = store.list(&filter, Some(here), schema::CONTEXT_TURNS)?;
            let text = previous.iter().rev().map(|e| e.content.as_str()).collect::<Vec<_>>().join("\n");
            (text, previous.first().map_or(0, |e| e.id))
        };
        recent.retain(|(_, id, _)| *id != entry.id);
        recent.push((entry.timestamp, entry.id, entry.content.clone()));
        if recent.len() > NEIGHBOURS_KEPT {
            recent.sort_by_key(|(ts, id, _)| (*ts, *id));
            recent.drain(..recent.len() - NEIGHBOURS_KEPT);
        }
        Ok(Extra { context, prev })
    }
}

fn commit(writer: &mut IndexWriter<TantivyDocument>, stamp: &Stamp) -> Result<()> {
    let mut prepared = writer.prepare_commit()?;
    prepared.set_payload(&stamp.payload());
    prepared.commit()?;
    Ok(())
}

/// After a failed commit (a full disk, say) tantivy may have killed the writer:
/// replace it with a fresh one at the last good commit. The tail still holds the
/// uncommitted changes and the applied change number was not advanced, so the
/// next flush retries them.
fn reset_writer(guard: &mut Option<IndexWriter<TantivyDocument>>) {
    let Some(old) = guard.take() else { return };
    let index = old.index().clone();
    drop(old); // releases the directory lock
    match open_writer(&index) {
        Ok(writer) => *guard = Some(writer),
        Err(err) => log::error!("cannot reopen the search index writer: {err}"),
    }
}

/// The index writer: one indexing thread per core, up to two. A bulk save's
/// pages are analysed and indexed on both cores (and merged into one segment
/// afterwards); a flush of the tail uses one.
fn open_writer(index: &Index) -> tantivy::Result<IndexWriter<TantivyDocument>> {
    index.writer_with_num_threads(crate::runtime::cores().clamp(1, 2), WRITER_MEMORY)
}
