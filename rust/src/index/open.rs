//! Opening the index: what on disk is trusted, and rebuilding what is not.
//!
//! An index directory is trusted only when its last commit's stamp
//! (`identity.rs`) is confirmed by the database; its files are then checked in
//! the background (`health.rs`). Anything else (another database's index, a
//! stamp the log refutes, unreadable files, a panic while opening, damage found
//! later) deletes the directory and rebuilds it from the change log.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use tantivy::{Index, ReloadPolicy};

use super::health::{shielded, Health};
use super::identity::Stamp;
use super::sealed::Sealed;
use super::tail::Tail;
use super::unsynced::Unsynced;
use super::{clean, open_writer, schema, Follow, SearchIndex, View};
use crate::error::{Error, Result};
use crate::store::{ListFilter, Store};

impl SearchIndex {
    /// Opens the index at `dir` (or in RAM) and brings it up to date with `store`.
    /// Dense queries over at most `exact_below` vectors scan them (`vectors.rs`).
    pub fn open(dir: Option<&Path>, store: Arc<Store>, exact_below: usize) -> Result<Self> {
        let database = store.database_id()?.unwrap_or_default();
        if database.is_empty() && dir.is_some() {
            log::warn!("the database has no id: its search index is rebuilt on every open");
        }
        let head = store.head()?;
        let (index, closed_cleanly) = match dir {
            None => (Self::create(None, &store, &database)?, false),
            Some(dir) => {
                let opened =
                    shielded("opening the search index", || Self::open_dir(dir, &store, &database, head));
                let untrusted = |why: &dyn std::fmt::Display| {
                    log::warn!("rebuilding the search index at {}: {why}", dir.display());
                    Self::create(Some(dir), &store, &database).map(|index| (index.owning(Some(dir)), false))
                };
                match opened {
                    Ok(Opened::Trusted(index, payload)) => {
                        ((*index).owning(Some(dir)), clean::take(dir, &payload))
                    }
                    Ok(Opened::Untrusted(why)) => untrusted(&why)?,
                    Err(Error::Index(tantivy::TantivyError::LockFailure(..))) => {
                        // Another process owns this index directory: keep a private
                        // in-RAM index that follows the same change log.
                        log::warn!("{} is in use by another process; indexing in RAM", dir.display());
                        (Self::create(None, &store, &database)?, false)
                    }
                    Err(err) => untrusted(&err)?,
                }
            }
        };
        index.exact_below.store(exact_below, Ordering::Release);
        index.load_vectors(&store)?;
        index.load_graph();
        index.follow(&store, Follow::Commit)?;
        // A commit that half-failed (a full disk) can leave an index whose payload
        // claims changes its segments lack: a count that disagrees means rebuild.
        if index.dir.is_none() || closed_cleanly {
            return Ok(index);
        }
        let indexed = index.view.read().searcher.num_docs();
        let stored = u64::try_from(store.count(&ListFilter::default())?).unwrap_or(0);
        if indexed != stored {
            let why = format!("it holds {indexed} of {stored} entries");
            let _order = index.apply_lock.lock();
            index.rebuild_locked(&store, &index.health(), &why)?;
        }
        Ok(index)
    }

    /// Records the directory this index owns, where a clean close leaves its mark.
    fn owning(mut self, dir: Option<&Path>) -> Self {
        self.dir = dir.map(Path::to_path_buf);
        self
    }

    /// The index at `dir`, trusted if the database confirms its stamp; its
    /// files are then checked in the background.
    fn open_dir(dir: &Path, store: &Arc<Store>, database: &str, head: i64) -> Result<Opened> {
        let (schema, _) = schema::build();
        std::fs::create_dir_all(dir)?;
        let index = Index::open_or_create(directory(dir, store)?, schema)?;
        let metas = index.load_metas()?;
        let (committed, payload) = match metas.payload {
            // A new index: nothing in it to trust or distrust.
            None if metas.segments.is_empty() => (0, String::new()),
            None => return Ok(Opened::Untrusted("its commit names no database".into())),
            Some(payload) => {
                let Some(stamp) = Stamp::parse(&payload) else {
                    return Ok(Opened::Untrusted(format!(
                        "its commit does not name a database ({payload:?})"
                    )));
                };
                if let Some(why) = stamp.refuted_by(store, database, head)? {
                    return Ok(Opened::Untrusted(why));
                }
                (stamp.seq, payload)
            }
        };
        let segments = !metas.segments.is_empty();
        let checked = index.clone();
        // Sound until the check starts, which is before anyone else sees it;
        // started once this process holds the directory's writer lock.
        let opened = Self::from_index(index, committed, Health::sound(), store, database)?;
        if segments {
            *opened.health.write() = Health::check(checked, dir.display().to_string())?;
        }
        Ok(Opened::Trusted(Box::new(opened), payload))
    }

    /// A new, empty index at `dir` (whatever was there is deleted) or in RAM.
    fn create(dir: Option<&Path>, store: &Arc<Store>, database: &str) -> Result<Self> {
        Self::from_index(fresh(dir, store)?, 0, Health::sound(), store, database)
    }

    /// `index` with its writer (this process's lock on a directory), reader and
    /// view, reflecting changes up to `committed`.
    fn from_index(
        index: Index,
        committed: i64,
        health: Arc<Health>,
        store: &Arc<Store>,
        database: &str,
    ) -> Result<Self> {
        let (_, fields) = schema::build();
        let (writer, reader, view) = open_parts(&index)?;
        Ok(Self {
            fields,
            store: Arc::clone(store),
            database: database.to_owned(),
            reader: RwLock::new(reader),
            writer: Mutex::new(Some(writer)),
            view: RwLock::new(view),
            dense: RwLock::default(),
            graph: RwLock::default(),
            graph_steps: Mutex::default(),
            exact_below: AtomicUsize::new(super::EXACT_BELOW),
            applied: AtomicI64::new(committed),
            apply_lock: Mutex::new(()),
            deferred: Mutex::default(),
            unmerged: Mutex::default(),
            health: RwLock::new(health),
            dir: None,
            commit_failed: AtomicBool::new(false),
            entries: (store.reads_remote() || store.reads_replica())
                .then(|| super::EntryCache::new(super::entries::CAPACITY)),
        })
    }

    /// Whether the committed index may be read now: sound, or waited for and
    /// rebuilt from `store` when damaged. Errs when the rebuild fails.
    pub(super) fn ready(&self, store: &Store) -> Result<()> {
        let health = self.health();
        if let Err(why) = health.wait() {
            let _order = self.apply_lock.lock();
            self.rebuild_locked(store, &health, &why)?;
        }
        Ok(())
    }

    /// `ready` for callers that hold `apply_lock`; true when it rebuilt the
    /// index, which then holds every change in the log.
    pub(super) fn ready_locked(&self, store: &Store) -> Result<bool> {
        let health = self.health();
        match health.wait() {
            Ok(()) => Ok(false),
            Err(why) => self.rebuild_locked(store, &health, &why).map(|()| true),
        }
    }

    /// Replaces the index whose health is `seen` by a new one built from the
    /// change log, unless another thread already did. Callers hold `apply_lock`.
    pub(super) fn rebuild_locked(&self, store: &Store, seen: &Arc<Health>, why: &str) -> Result<()> {
        if !Arc::ptr_eq(&self.health(), seen) {
            return Ok(());
        }
        let place = self.dir.as_ref().map_or_else(|| "in RAM".to_owned(), |d| format!("at {}", d.display()));
        log::warn!("rebuilding the search index {place}: {why}");
        let mut guard = self.writer.lock();
        // Released first: the old writer holds the directory's lock.
        drop(guard.take());
        let rebuilt = shielded("rebuilding the search index", || {
            let index = fresh(self.dir.as_deref(), store)?;
            open_parts(&index)
        });
        let (writer, reader, view) = match rebuilt {
            Ok(parts) => parts,
            Err(err) => {
                log::error!("cannot rebuild the search index {place}: {err}");
                return Err(err);
            }
        };
        *self.reader.write() = reader;
        *guard = Some(writer);
        // Their segments are gone; the rebuilt index commits its own.
        *self.unmerged.lock() = None;
        *self.view.write() = view;
        if let Some(cache) = &self.entries {
            cache.clear();
        }
        self.applied.store(0, Ordering::Release);
        self.commit_failed.store(false, Ordering::Release);
        *self.health.write() = Health::sound();
        drop(guard);
        self.commit_log_locked(store)
    }
}

/// What `open_dir` found.
enum Opened {
    /// The index, and its last commit's payload.
    Trusted(Box<SearchIndex>, String),
    /// Why the index on disk cannot be trusted.
    Untrusted(String),
}

/// The index directory at `dir`: sealed for an encrypted store (`sealed.rs`).
fn directory(dir: &Path, store: &Store) -> Result<Box<dyn tantivy::Directory>> {
    Ok(match store.index_key()? {
        Some(key) => Box::new(Sealed::open(dir, &key)?),
        None => Box::new(Unsynced::open(dir)?),
    })
}

/// Deletes whatever is at `dir` and creates an empty index there (or in RAM).
fn fresh(dir: Option<&Path>, store: &Store) -> Result<Index> {
    let (schema, _) = schema::build();
    let Some(dir) = dir else { return Ok(Index::create_in_ram(schema)) };
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(dir)?,
        Ok(_) => std::fs::remove_file(dir)?, // a file where the directory belongs
        Err(_) => {}
    }
    std::fs::create_dir_all(dir)?;
    Ok(Index::create(directory(dir, store)?, schema, tantivy::IndexSettings::default())?)
}

/// The writer, reader and committed view of `index`, refused when its schema
/// is not ours.
fn open_parts(
    index: &Index,
) -> Result<(tantivy::IndexWriter<tantivy::TantivyDocument>, tantivy::IndexReader, View)> {
    let (schema, _) = schema::build();
    if index.schema() != schema {
        return Err(Error::Internal("the index has another schema".into()));
    }
    schema::register(index);
    let writer = open_writer(index)?;
    let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
    let (searcher, columns) = View::committed(reader.searcher())?;
    Ok((writer, reader, View { searcher, columns, tail: Tail::default() }))
}
