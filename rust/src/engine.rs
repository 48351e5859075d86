//! The engine: validates, writes to the store, keeps the index in step, ranks
//! and packs. Everything here is synchronous and may block; the bindings run it
//! off the event loop.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::config::Config;
use crate::entry::{validate_label, validate_timestamp, Entry, Hit, Micros, NewEntry};
use crate::error::{Error, Result};
use crate::index::schema::scope_key;
use crate::index::{Flusher, SearchIndex, SearchRequest};
use crate::pack::pack;
use crate::store::{now_micros, Change, ChangeOp, PreparedEntry, Store};
use crate::tokens::TokenCounter;

const MICROS_PER_DAY: f64 = 86_400_000_000.0;

/// What a query asks for.
#[derive(Debug, Clone)]
pub struct Query {
    pub text: String,
    /// `None` searches every scope; otherwise the listed scopes, where `None`
    /// in the list stands for global entries.
    pub scopes: Option<Vec<Option<String>>>,
    pub budget: u64,
    /// The clock for recency; defaults to now.
    pub now: Option<Micros>,
    /// Ranked candidates to consider before packing; defaults to the config's.
    pub depth: Option<usize>,
}

impl Query {
    pub fn new(text: impl Into<String>, budget: u64) -> Self {
        Self { text: text.into(), scopes: None, budget, now: None, depth: None }
    }

    pub fn in_scope(mut self, scope: impl Into<String>) -> Self {
        self.scopes = Some(vec![Some(scope.into())]);
        self
    }
}

pub struct Engine {
    config: Config,
    store: Store,
    index: Arc<SearchIndex>,
    flusher: Flusher,
    tokens: TokenCounter,
    closed: AtomicBool,
}

impl Engine {
    pub fn open(config: Config) -> Result<Self> {
        config.validate()?;
        let tokens = TokenCounter::load(&config.tokenizer)?;
        let store = Store::open(&config)?;
        let index = Arc::new(SearchIndex::open(config.resolved_index_dir().as_deref(), &store)?);
        let flusher =
            Flusher::start(Arc::clone(&index), Duration::from_millis(config.flush_ms.max(1)))?;
        Ok(Self { config, store, index, flusher, tokens, closed: AtomicBool::new(false) })
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn save(&self, entry: NewEntry) -> Result<i64> {
        let ids = self.save_many(vec![entry])?;
        ids.first().copied().ok_or_else(|| Error::Internal("save returned no id".into()))
    }

    /// Saves entries in one transaction: all or none. When it returns, they are
    /// durable and visible to the next query.
    pub fn save_many(&self, entries: Vec<NewEntry>) -> Result<Vec<i64>> {
        self.check_open()?;
        for (i, entry) in entries.iter().enumerate() {
            entry.validate().map_err(|err| match err {
                Error::InvalidInput(msg) if entries.len() > 1 => {
                    Error::InvalidInput(format!("item {i}: {msg}"))
                }
                other => other,
            })?;
        }
        let now = now_micros();
        let prepared: Vec<PreparedEntry> = entries
            .into_iter()
            .map(|e| PreparedEntry {
                tokens: self.tokens.count(&e.content),
                timestamp: e.timestamp.unwrap_or(now),
                content: e.content,
                kind: e.kind,
                scope: e.scope,
                session_id: e.session_id,
                metadata: e.metadata,
            })
            .collect();
        let written = self.store.insert(&prepared)?;
        let changes: Vec<Change> = written
            .iter()
            .zip(prepared)
            .map(|(&(id, seq), p)| Change {
                seq,
                entry_id: id,
                op: ChangeOp::Insert,
                entry: Some(Entry {
                    id,
                    content: p.content,
                    kind: p.kind,
                    scope: p.scope,
                    session_id: p.session_id,
                    metadata: p.metadata,
                    timestamp: p.timestamp,
                    tokens: p.tokens,
                }),
            })
            .collect();
        self.index.apply_local(&self.store, changes)?;
        if self.index.pending() >= self.config.flush_entries {
            self.flusher.nudge();
        }
        Ok(written.into_iter().map(|(id, _)| id).collect())
    }

    /// Ranks entries for `query` and packs the best into its token budget.
    pub fn query(&self, query: &Query) -> Result<Vec<Hit>> {
        self.check_open()?;
        if query.budget == 0 {
            return Err(Error::invalid("budget must be a positive number of tokens"));
        }
        if let Some(now) = query.now {
            validate_timestamp("now", now)?;
        }
        for scope in query.scopes.iter().flatten().flatten() {
            validate_label("scope", scope)?;
        }
        let depth = query.depth.unwrap_or(self.config.depth);
        if depth == 0 || depth > 10_000 {
            return Err(Error::invalid("depth must be between 1 and 10000"));
        }
        if !self.config.is_memory() {
            // Another process may have written to the same database.
            self.index.sync(&self.store)?;
        }
        let request = SearchRequest {
            text: query.text.clone(),
            scopes: query.scopes.as_ref().map(|scopes| {
                scopes.iter().map(|s| scope_key(s.as_deref()).to_owned()).collect()
            }),
            depth,
            now: query.now.unwrap_or_else(now_micros),
            recency_weight: self.config.recency.weight,
            half_life_us: f64::from(self.config.recency.half_life_days) * MICROS_PER_DAY,
        };
        let packed = pack(&self.index.search(&request)?, query.budget);
        let ids: Vec<i64> = packed.iter().map(|c| c.id).collect();
        let entries = self.store.fetch(&ids)?;
        let mut scores = packed.iter().map(|c| (c.id, c.score)).collect::<std::collections::HashMap<_, _>>();
        Ok(entries
            .into_iter()
            .map(|entry| {
                let score = scores.remove(&entry.id).unwrap_or(0.0);
                Hit { entry, score }
            })
            .collect())
    }

    pub fn count(&self) -> Result<u64> {
        self.check_open()?;
        self.store.count()
    }

    /// Commits pending index changes now (they are durable in the database
    /// already; this only saves the next open some work).
    pub fn flush(&self) -> Result<()> {
        self.check_open()?;
        self.index.flush()
    }

    /// Flushes the index and releases files and threads. Later calls fail with
    /// `Error::Closed`; closing twice is harmless.
    pub fn close(&self) -> Result<()> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.flusher.stop();
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
}

impl Drop for Engine {
    fn drop(&mut self) {
        if let Err(err) = self.close() {
            log::error!("closing the store failed: {err}");
        }
    }
}
