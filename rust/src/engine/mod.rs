//! The engine: validates, writes to the store, keeps the index in step, ranks
//! and packs. Everything here is synchronous and may block; the bindings run it
//! off the event loop.

mod admit;
mod audit;
mod bulk;
mod distill;
mod forget;
mod probe;
mod read;
mod select;
mod vectors;
mod write;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::config::{Config, Eviction};
use crate::entry::Micros;
use crate::error::{Error, Result};
use crate::index::{Flusher, Follow, Grapher, SearchIndex, BULK_CHANGES};
use crate::scrub::{ScrubOptions, Scrubber};
use crate::store::{Change, Retention, Store};
use crate::tokens::TokenCounter;
use parking_lot::Mutex;
use std::collections::HashMap;

pub use bulk::BulkSave;
pub use forget::Receipt;
pub use read::{InjectionPolicy, Query, Timings};
pub use vectors::{EmbedderInfo, EXTERNAL};
pub use write::Patch;

pub use crate::store::ListFilter;

pub struct Memory {
    config: Config,
    store: Arc<Store>,
    index: Arc<SearchIndex>,
    flusher: Flusher,
    grapher: Grapher,
    tokens: TokenCounter,
    scrubber: Scrubber,
    /// Entries queries returned since the last write, for LRU eviction.
    returned: Mutex<HashMap<i64, Micros>>,
    /// The embedder last read from the store.
    embedder_seen: Mutex<Option<EmbedderInfo>>,
    /// The store's secret key for context fences (`render`).
    fence_key: u64,
    /// The key of the read audit's query hashes, and the reads not yet written.
    audit_key: (u64, u64),
    reads: Arc<audit::ReadLog>,
    /// What the store scrubbed before this open that this one does not
    /// (`"secrets"`, `"pii"`, `"metadata"`): entries saved now keep it.
    scrub_dropped: Vec<String>,
    closed: AtomicBool,
}

impl Memory {
    pub fn open(mut config: Config) -> Result<Self> {
        config.validate()?;
        let tokens = TokenCounter::load(&config.tokenizer)?;
        let store = Arc::new(Store::open(&config)?);
        // Recorded so that anyone reading the database knows what was redacted.
        let read_only = store.is_read_only();
        let recorded = store.meta("scrub")?;
        if config.scrub_pii_from_store {
            config.scrub.pii = recorded.as_deref().is_some_and(|r| r.split('+').any(|p| p == "pii"));
        }
        let scrub = config.scrub.describe();
        // What the store redacted before and this open does not.
        let scrub_dropped = recorded.as_deref().map_or_else(Vec::new, |before| {
            before
                .split('+')
                .filter(|part| *part != "off" && !scrub.split('+').any(|p| p == *part))
                .map(str::to_owned)
                .collect()
        });
        if !read_only && recorded.as_deref() != Some(scrub.as_str()) {
            store.set_meta("scrub", &scrub)?;
        }
        // A read-only store that never had a fence key cannot keep one: its
        // fences are then unkeyed (still never found in what they fence).
        let fence_key = match store.secret("fence_key") {
            Err(_) if read_only => 0,
            key => key?,
        };
        let audit_key = if config.audit.reads && !read_only {
            (store.secret("audit_key")?, store.secret("audit_key_hi")?)
        } else {
            (0, 0)
        };
        // A read-only store's index is built in RAM: its directory may not be writable.
        let index_dir = if read_only { None } else { config.resolved_index_dir() };
        let index =
            Arc::new(SearchIndex::open(index_dir.as_deref(), Arc::clone(&store), config.exact_below)?);
        // Built while the index's files are checked in the background.
        let scrubber = Scrubber::new(ScrubOptions { secrets: config.scrub.secrets, pii: config.scrub.pii });
        let flusher = Flusher::start(Arc::clone(&index), Duration::from_millis(config.flush_ms.max(1)))?;
        // One thread: the graph is built beside saves and queries, not ahead
        // of them (`flush` catches it up on every core).
        let grapher = Grapher::start(Arc::clone(&index), 1)?;
        let reads = audit::ReadLog::new(Arc::clone(&store), config.audit.retention_days);
        let engine = Self {
            config,
            store,
            index,
            flusher,
            grapher,
            tokens,
            scrubber,
            returned: Mutex::default(),
            embedder_seen: Mutex::default(),
            fence_key,
            audit_key,
            reads,
            scrub_dropped,
            closed: AtomicBool::new(false),
        };
        if !read_only {
            engine.purge_expired(None)?;
        }
        Ok(engine)
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Whether saves scrub personal data: the config's setting, or the
    /// store's when the config takes it from there.
    pub fn scrubs_pii(&self) -> bool {
        self.config.scrub.pii
    }

    /// The tokens `text` holds by the store's tokenizer (`Config::tokenizer`),
    /// as a save counts an entry's content.
    pub fn count_tokens(&self, text: &str) -> u32 {
        self.tokens.count(text)
    }

    /// What the store scrubbed before this open that this one does not.
    pub fn scrub_dropped(&self) -> &[String] {
        &self.scrub_dropped
    }

    /// Commits pending index changes now (they are durable in the database
    /// already; this only saves the next open some work), and brings the
    /// vector graph up to date, so that no hybrid query scans what it lacks.
    pub fn flush(&self) -> Result<()> {
        self.check_open()?;
        self.write_returned()?;
        self.write_reads()?;
        self.index.catch_up()?;
        self.index.merge_pending();
        self.index.flush()?;
        self.index.catch_up_graph()
    }

    /// Brings a replica up to date with its server now, and the search index
    /// with it; the replication frame reached. `None` for any other store
    /// (a local file, or a server read directly, is always current).
    pub fn sync(&self) -> Result<Option<u64>> {
        self.check_open()?;
        let frame = self.store.sync()?;
        if frame.is_some() {
            self.follow()?;
        }
        Ok(frame)
    }

    /// Re-encrypts an encrypted database file with `key` (`Store::rekey`).
    pub fn rekey(&self, key: crate::store::EncryptionKey) -> Result<()> {
        self.check_open()?;
        self.store.rekey(key)
    }

    /// Whether saves go over the network (a libSQL server, with or without
    /// a replica), and whether reads do (a server without a replica).
    pub fn over_network(&self) -> (bool, bool) {
        (self.store.is_remote(), self.store.reads_remote())
    }

    /// Whether the database file is encrypted.
    pub fn is_encrypted(&self) -> bool {
        self.store.is_encrypted()
    }

    /// The vector graph: (vectors it holds, bytes of memory); (0, 0) when the
    /// store is small enough to scan (`Config::exact_below` vectors or fewer).
    pub fn graph_shape(&self) -> (usize, usize) {
        self.index.graph_shape()
    }

    /// Flushes the index and releases files and threads. Later calls fail with
    /// `Error::Closed`; closing twice is harmless.
    pub fn close(&self) -> Result<()> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.flusher.stop();
        self.grapher.stop();
        self.write_returned()?;
        self.write_reads()?;
        // A bulk save the flusher had not indexed yet, so the next open need
        // not: the log keeps it should this fail (a server gone, say).
        if let Err(err) = self.index.catch_up() {
            log::warn!("catching the search index up before closing failed: {err}");
        }
        self.index.close()
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    fn check_open(&self) -> Result<()> {
        if self.is_closed() {
            Err(Error::Closed)
        } else {
            Ok(())
        }
    }

    /// Makes this process's own writes searchable to the next query: a few
    /// before the call returns, a bulk after (`index_later`).
    fn publish(&self, changes: Vec<Change>) -> Result<()> {
        if changes.is_empty() {
            return Ok(());
        }
        if changes.len() >= BULK_CHANGES && self.defers_bulks() {
            self.index_later(changes);
            return Ok(());
        }
        self.index.follow(&self.store, Follow::Local(changes))?;
        self.nudge_flusher();
        self.nudge_grapher();
        Ok(())
    }

    /// Whether a bulk save returns before the index takes it in: every store
    /// but one in memory, whose queries read without following a log, so it
    /// indexes before returning.
    fn defers_bulks(&self) -> bool {
        !self.config.is_memory()
    }

    /// Has the flusher index a bulk save's `changes` (or, given none, what
    /// the log holds) while the save returns, so that the caller's next call
    /// overlaps the indexing: whatever reads the index next follows the log
    /// first (`follow`), waiting for the flusher or catching up itself, so the
    /// bulk is never missed.
    fn index_later(&self, changes: Vec<Change>) {
        self.index.defer(changes);
        self.flusher.nudge();
    }

    /// Asks for an index commit when the tail has grown past `flush_entries`.
    fn nudge_flusher(&self) {
        if self.index.pending() >= self.config.flush_entries {
            self.flusher.nudge();
        }
    }

    /// Asks the graph to take in new or changed vectors, when it has work.
    fn nudge_grapher(&self) {
        if self.index.graph_backlog() > 0 {
            self.grapher.nudge();
        }
    }

    /// The retention rules for a write, carrying the pending returned-at times.
    fn retention(&self) -> Option<Retention> {
        let max_per_scope = self.config.max_entries_per_scope?;
        let returned = std::mem::take(&mut *self.returned.lock()).into_iter().collect();
        Some(Retention { max_per_scope, eviction: self.config.eviction, returned })
    }

    /// Notes that queries returned these entries (only when eviction uses it).
    fn note_returned(&self, ids: impl Iterator<Item = i64>, at: Micros) {
        if !self.store.is_read_only()
            && self.config.max_entries_per_scope.is_some()
            && self.config.eviction == Eviction::LeastRecentlyReturned
        {
            let mut returned = self.returned.lock();
            for id in ids {
                returned.insert(id, at);
            }
        }
    }

    fn write_returned(&self) -> Result<()> {
        match self.retention() {
            Some(retention) if !retention.returned.is_empty() => {
                self.store.insert(&[], Some(&retention)).map(drop)
            }
            _ => Ok(()),
        }
    }

    /// `follow` without waiting: false when it would wait for another thread
    /// (one indexing a bulk save), catch up on more than a few changes, or go
    /// over the network. Only a local file qualifies: an in-memory store reads through
    /// the writer's one connection, which a bulk save holds.
    fn follow_now(&self) -> Result<bool> {
        if !self.store.is_file() {
            return Ok(false);
        }
        self.index.follow(&self.store, Follow::Try)
    }

    /// Brings the index up to date with writes from other processes.
    fn follow(&self) -> Result<()> {
        if self.config.is_memory() {
            Ok(())
        } else {
            self.index.follow(&self.store, Follow::Wait).map(drop)
        }
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        if let Err(err) = self.close() {
            log::error!("closing the store failed: {err}");
        }
    }
}
