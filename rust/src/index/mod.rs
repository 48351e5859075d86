//! The derived search index: tantivy on disk (or in RAM) plus an in-memory tail.
//!
//! The index follows the store's change log. Its commits carry the number of the
//! last change they include, so on open it applies only what it missed, and a
//! missing or unreadable index is rebuilt from the database.

mod flusher;
pub mod schema;
mod search;
mod stats;
pub mod tail;

use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};

use parking_lot::{Mutex, RwLock};
use tantivy::directory::MmapDirectory;
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, TantivyDocument, Term};

use crate::error::{Error, Result};
use crate::store::{Change, ChangeOp, Store};

pub use flusher::Flusher;
pub use search::{Candidate, SearchRequest};
use schema::Fields;
use tail::Tail;

const WRITER_MEMORY: usize = 64 * 1024 * 1024;
const CATCH_UP_BATCH: usize = 10_000;
/// Batches at least this large skip the tail and go straight into one commit.
const BULK_CHANGES: usize = 1_000;

/// A consistent pair: the committed searcher and the tail of newer changes.
struct View {
    searcher: Searcher,
    tail: Tail,
}

pub struct SearchIndex {
    fields: Fields,
    reader: IndexReader,
    writer: Mutex<Option<IndexWriter<TantivyDocument>>>,
    view: RwLock<View>,
    /// The newest change applied to the view; guarded for writes by `apply_lock`.
    applied: AtomicI64,
    apply_lock: Mutex<()>,
}

impl SearchIndex {
    /// Opens the index at `dir` (or in RAM) and brings it up to date with `store`.
    pub fn open(dir: Option<&Path>, store: &Store) -> Result<Self> {
        let head = store.head()?;
        let index = match dir {
            None => Self::create(None)?,
            Some(dir) => match Self::open_dir(dir, head) {
                Ok(index) => index,
                Err(Error::Index(tantivy::TantivyError::LockFailure(..))) => {
                    // Another process owns this index directory: keep a private
                    // in-RAM index that follows the same change log.
                    log::warn!("{} is in use by another process; indexing in RAM", dir.display());
                    Self::create(None)?
                }
                Err(err) => {
                    log::warn!("rebuilding the search index at {}: {err}", dir.display());
                    Self::create(Some(dir))?
                }
            },
        };
        index.catch_up(store)?;
        Ok(index)
    }

    fn open_dir(dir: &Path, head: i64) -> Result<Self> {
        let (schema, _) = schema::build();
        std::fs::create_dir_all(dir)?;
        let index = Index::open_or_create(MmapDirectory::open(dir)?, schema)?;
        let committed = match index.load_metas()?.payload {
            None => 0,
            Some(payload) => payload
                .parse::<i64>()
                .map_err(|_| Error::Internal(format!("unreadable index payload {payload:?}")))?,
        };
        if committed > head {
            return Err(Error::Internal(format!(
                "the index has change {committed} but the database ends at {head}"
            )));
        }
        Self::from_index(index, committed)
    }

    fn create(dir: Option<&Path>) -> Result<Self> {
        let (schema, _) = schema::build();
        let index = match dir {
            None => Index::create_in_ram(schema),
            Some(dir) => {
                if dir.exists() {
                    std::fs::remove_dir_all(dir)?;
                }
                std::fs::create_dir_all(dir)?;
                Index::create_in_dir(dir, schema)?
            }
        };
        Self::from_index(index, 0)
    }

    fn from_index(index: Index, committed: i64) -> Result<Self> {
        let (schema, fields) = schema::build();
        if index.schema() != schema {
            return Err(Error::Internal("the index has another schema".into()));
        }
        schema::register(&index);
        let writer = index.writer_with_num_threads(1, WRITER_MEMORY)?;
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
        let searcher = reader.searcher();
        Ok(Self {
            fields,
            reader,
            writer: Mutex::new(Some(writer)),
            view: RwLock::new(View { searcher, tail: Tail::default() }),
            applied: AtomicI64::new(committed),
            apply_lock: Mutex::new(()),
        })
    }

    /// The newest change the index reflects.
    pub fn applied(&self) -> i64 {
        self.applied.load(Ordering::Acquire)
    }

    /// Applies every change after `applied()` straight into the writer and commits:
    /// the bulk path for open and rebuild.
    fn catch_up(&self, store: &Store) -> Result<()> {
        let _order = self.apply_lock.lock();
        let mut guard = self.writer.lock();
        let writer = guard.as_mut().ok_or(Error::Closed)?;
        let mut applied = self.applied();
        let start = applied;
        loop {
            let changes = store.changes_since(applied, CATCH_UP_BATCH)?;
            for change in &changes {
                if change.op != ChangeOp::Insert {
                    writer.delete_term(Term::from_field_i64(self.fields.id, change.entry_id));
                }
                if let Some(entry) = &change.entry {
                    writer.add_document(schema::document(&self.fields, entry))?;
                }
                applied = change.seq;
            }
            if changes.len() < CATCH_UP_BATCH {
                break;
            }
        }
        if applied > start {
            log::info!("search index applied changes {} to {applied}", start + 1);
            commit(writer, applied)?;
            self.reader.reload()?;
            self.view.write().searcher = self.reader.searcher();
            self.applied.store(applied, Ordering::Release);
        }
        Ok(())
    }

    /// Makes the store's newest changes searchable. Cheap when nothing is new.
    pub fn sync(&self, store: &Store) -> Result<()> {
        if store.head()? > self.applied() {
            self.pull(store, None)?;
        }
        Ok(())
    }

    /// Applies changes that this process just wrote. When they directly follow
    /// what the index has, they are applied as given; otherwise another writer
    /// got in between and the log is read from the store.
    pub fn apply_local(&self, store: &Store, changes: Vec<Change>) -> Result<()> {
        self.pull(store, Some(changes))
    }

    fn pull(&self, store: &Store, local: Option<Vec<Change>>) -> Result<()> {
        let _order = self.apply_lock.lock();
        let applied = self.applied();
        let changes = match local {
            Some(changes) if changes.first().is_some_and(|c| c.seq == applied + 1) => changes,
            Some(changes) if changes.last().is_some_and(|c| c.seq <= applied) => return Ok(()),
            _ => store.changes_since(applied, usize::MAX >> 1)?,
        };
        if changes.len() >= BULK_CHANGES {
            return self.commit_with(&changes);
        }
        let mut analyzer = schema::analyzer();
        let prepared: Vec<(Change, Vec<String>)> = changes
            .into_iter()
            .filter(|c| c.seq > applied)
            .map(|c| {
                let terms =
                    c.entry.as_ref().map(|e| schema::terms(&mut analyzer, &e.content)).unwrap_or_default();
                (c, terms)
            })
            .collect();
        let Some(last) = prepared.last().map(|(c, _)| c.seq) else { return Ok(()) };
        let mut view = self.view.write();
        for (change, terms) in prepared {
            match change.entry {
                Some(entry) => {
                    view.tail.upsert(entry, change.seq, terms, change.op != ChangeOp::Insert);
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
    fn commit_with(&self, changes: &[Change]) -> Result<()> {
        let mut guard = self.writer.lock();
        let writer = guard.as_mut().ok_or(Error::Closed)?;
        self.commit_tail(writer, changes)
    }

    /// Commits the tail to the index, then drops what the commit made durable.
    pub fn flush(&self) -> Result<()> {
        let mut guard = self.writer.lock();
        let Some(writer) = guard.as_mut() else { return Ok(()) };
        if self.view.read().tail.is_empty() {
            return Ok(());
        }
        self.commit_tail(writer, &[])
    }

    /// Writes the tail and then `extra` into the writer and commits them as one.
    /// The tail is read under one lock with the change number it reflects, so the
    /// commit's payload and the later trim agree.
    fn commit_tail(&self, writer: &mut IndexWriter<TantivyDocument>, extra: &[Change]) -> Result<()> {
        let mut upto = {
            let view = self.view.read();
            for &id in view.tail.tombstones.keys() {
                writer.delete_term(Term::from_field_i64(self.fields.id, id));
            }
            for doc in view.tail.docs.values() {
                writer.add_document(schema::document(&self.fields, &doc.entry))?;
            }
            self.applied()
        };
        for change in extra.iter().filter(|c| c.seq > upto) {
            if change.op != ChangeOp::Insert {
                writer.delete_term(Term::from_field_i64(self.fields.id, change.entry_id));
            }
            if let Some(entry) = &change.entry {
                writer.add_document(schema::document(&self.fields, entry))?;
            }
        }
        upto = upto.max(extra.last().map_or(upto, |c| c.seq));
        commit(writer, upto)?;
        self.reader.reload()?;
        let searcher = self.reader.searcher();
        let mut view = self.view.write();
        view.searcher = searcher;
        view.tail.trim(upto);
        // A flush runs beside pulls that may have moved further: never go back.
        self.applied.fetch_max(upto, Ordering::AcqRel);
        Ok(())
    }

    /// Flushes and releases the index writer (and its directory lock).
    pub fn close(&self) -> Result<()> {
        self.flush()?;
        if let Some(writer) = self.writer.lock().take() {
            writer.wait_merging_threads()?;
        }
        Ok(())
    }
}

fn commit(writer: &mut IndexWriter<TantivyDocument>, upto: i64) -> Result<()> {
    let mut prepared = writer.prepare_commit()?;
    prepared.set_payload(&upto.to_string());
    prepared.commit()?;
    Ok(())
}
