//! The derived search index: tantivy on disk (or in RAM) plus an in-memory tail.
//!
//! The index follows the store's change log. Its commits carry the number of the
//! last change they include, stamped with the database's identity
//! (`identity.rs`), so on open it applies only what it missed; an index the
//! database does not confirm, or whose files are damaged (`health.rs`), is
//! rebuilt from the database (`open.rs`).

mod candidate;
mod clean;
mod collect;
mod deferred;
pub mod dense;
mod entries;
mod flusher;
mod follow;
mod graph;
mod graph_file;
mod grapher;
mod health;
mod identity;
mod neighbours;
mod open;
mod purge;
pub mod schema;
mod sealed;
mod search;
mod segments;
mod stats;
mod stem;
pub mod tail;
mod unsynced;
mod vectors;
mod worker;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use tantivy::{Index, IndexReader, IndexWriter, Searcher, TantivyDocument, Term};

use crate::error::{Error, Result};
use crate::store::{Change, ChangeOp, Store};
use collect::SegmentColumns;

pub use candidate::Candidate;
use dense::Dense;
pub use flusher::Flusher;
pub use follow::{Follow, BULK_CHANGES};
use graph::Graph;
pub use grapher::Grapher;
use health::Health;
use identity::Stamp;
use schema::{Extra, Fields};
pub use search::SearchRequest;
use tail::Tail;
pub use vectors::EXACT_BELOW;

const WRITER_MEMORY: usize = 64 * 1024 * 1024;

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
    /// Entry embeddings; follows the same changes as `view`. Locked before
    /// `graph` when both are.
    dense: RwLock<Dense>,
    /// The approximate graph over `dense`'s vectors, in a large store (`vectors.rs`).
    graph: RwLock<Option<Graph>>,
    /// Held by whoever builds the graph (`vectors.rs`), one at a time.
    graph_steps: Mutex<()>,
    /// `Config::exact_below`.
    exact_below: AtomicUsize,
    /// The newest change applied to the view; guarded for writes by `apply_lock`.
    applied: AtomicI64,
    apply_lock: Mutex<()>,
    /// This process's bulk saves, indexed after they returned (`deferred.rs`).
    deferred: Mutex<deferred::Deferred>,
    /// The segments searchable before this process's bulk saves whose own
    /// segments wait to be merged (`SearchIndex::merge_pending`).
    unmerged: Mutex<Option<std::collections::HashSet<tantivy::index::SegmentId>>>,
    /// Whether the committed index may be read (`health.rs`).
    health: RwLock<Arc<Health>>,
    /// The directory, when this process owns it (not an in-RAM index).
    dir: Option<PathBuf>,
    /// A commit failed this session: the next open must count, not trust.
    commit_failed: AtomicBool,
    /// For a store read over the network or through a replica, the entries
    /// queries pack (`entries.rs`).
    entries: Option<entries::EntryCache>,
}

pub use entries::EntryCache;

impl SearchIndex {
    /// The entries a query packs, kept for a store read over the network or
    /// through a replica.
    pub fn entry_cache(&self) -> Option<&EntryCache> {
        self.entries.as_ref()
    }

    /// Tells the entry cache about changes being applied: a few are taken
    /// in, a bulk only let go.
    fn cache_applied(&self, changes: &[Change], bulk: bool) {
        match &self.entries {
            Some(cache) if bulk => cache.dropped(changes),
            Some(cache) => cache.applied(changes),
            None => {}
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
            self.merge_pending();
            self.commit_pending()?;
        }
        self.save_graph();
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
        // The commits and merges left their files unsynced (`unsynced.rs`):
        // durable now, so a power cut after a clean close costs no rebuild.
        if let Some(dir) = &self.dir {
            if let Err(err) = unsynced::sync_all(dir) {
                log::warn!("cannot sync the search index at {}: {err}", dir.display());
            }
        }
        Ok(())
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

/// The index writer, with one indexing thread: each thread's segment writer
/// takes memory of its own at every commit (a term table, an FST builder per
/// field), so a flush of the tail or a save of a few thousand entries costs
/// less, in time and in memory, on one thread. A wide bulk of changes gets
/// more (`SearchIndex::widen`).
fn open_writer(index: &Index) -> tantivy::Result<IndexWriter<TantivyDocument>> {
    open_writer_with(index, 1)
}

fn open_writer_with(index: &Index, threads: usize) -> tantivy::Result<IndexWriter<TantivyDocument>> {
    let writer = index.writer_with_num_threads(threads, WRITER_MEMORY)?;
    writer.set_merge_policy(Box::new(segments::CappedMerges::new()));
    Ok(writer)
}

/// Changes at least this many behind make a wide bulk: indexed on one thread
/// per core, up to two (and merged afterwards, in segments of at most
/// `segments::SEGMENT_DOCS`).
const WIDE_BULK: i64 = 50_000;

impl SearchIndex {
    /// Runs `bulk` with a writer of one indexing thread per core (up to two)
    /// when `behind` changes make a wide bulk, and with the usual one-thread
    /// writer otherwise. The writer holds nothing uncommitted when swapped.
    fn widen<T>(&self, behind: i64, bulk: impl FnOnce() -> Result<T>) -> Result<T> {
        let threads = crate::runtime::cores().clamp(1, 2);
        if behind < WIDE_BULK || threads < 2 {
            return bulk();
        }
        self.swap_writer(threads)?;
        let result = bulk();
        let narrowed = self.swap_writer(1);
        let done = result?;
        narrowed.map(|()| done)
    }

    fn swap_writer(&self, threads: usize) -> Result<()> {
        let mut guard = self.writer.lock();
        let old = guard.take().ok_or(Error::Closed)?;
        let index = old.index().clone();
        drop(old); // joins its threads and releases the directory lock
        *guard = Some(open_writer_with(&index, threads)?);
        Ok(())
    }
}

/// Merges each group of segments (groups of one are rewritten alone only when
/// `alone` is set: a purge drops their deleted documents that way), all
/// started before any is waited for.
fn merge_groups(
    writer: &mut IndexWriter<TantivyDocument>,
    groups: Vec<Vec<tantivy::index::SegmentId>>,
    alone: bool,
) -> tantivy::Result<usize> {
    let started: Vec<_> = groups
        .into_iter()
        .filter(|group| alone || group.len() > 1)
        .map(|group| (group.len(), writer.merge(&group)))
        .collect();
    let mut merged = 0;
    let mut first_err = None;
    for (len, future) in started {
        match future.wait() {
            Ok(_) => merged += len,
            Err(err) => first_err = first_err.or(Some(err)),
        }
    }
    match first_err {
        Some(err) => Err(err),
        None => Ok(merged),
    }
}
