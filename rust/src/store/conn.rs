//! A connection that keeps its hot statements prepared.
//!
//! Parsing SQL cost a single save about a tenth of its time and a query's fetch
//! about as much. A local connection keeps each statement it is asked for
//! under its SQL text. A server connection keeps none (its statements live on
//! the server), and runs each query as a batch of SQL text with its parameters
//! written in (`literal.rs`): one round trip instead of two.
//!
//! A kept statement is reset when its rows are dropped. Until then it holds its
//! read snapshot open, so rows are read and dropped before the connection goes
//! back to the pool, and one kept statement is never run while its own rows
//! are still being read.

use std::collections::HashMap;
use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::time::{Duration, Instant};

use libsql::params::IntoParams;
use libsql::{Connection, Rows, Statement, Transaction, TransactionBehavior};
use parking_lot::Mutex;

use super::hrana;
use super::literal;
use crate::error::{Error, Result};

/// Statements kept per connection before they are all let go; the SQL texts
/// the store runs repeatedly are far fewer.
const KEPT: usize = 64;

pub(super) struct Conn {
    /// Dropped (finalized) before the connection they were prepared on.
    kept: Option<Mutex<HashMap<Box<str>, Arc<Statement>>>>,
    inner: Connection,
    /// A server connection (Hrana over HTTP).
    remote: bool,
    /// Our client for the hot batches, on a server connection (`hrana`).
    hrana: Option<Arc<hrana::Client>>,
    /// How long a write on a server waits for another connection's write
    /// transaction (a local connection's busy handler waits by itself).
    busy_timeout: Duration,
}

impl Conn {
    /// A local connection that keeps its statements.
    pub fn local(inner: Connection, busy_timeout: Duration) -> Self {
        Self { kept: Some(Mutex::new(HashMap::new())), inner, remote: false, hrana: None, busy_timeout }
    }

    /// A server connection: its statements live on the server; `hrana` sends
    /// the hot batches.
    pub fn remote(inner: Connection, hrana: Arc<hrana::Client>, busy_timeout: Duration) -> Self {
        Self { kept: None, inner, remote: true, hrana: Some(hrana), busy_timeout }
    }

    /// A connection to an embedded replica: local, but libSQL's replica
    /// statements do not bind anew once reset, so none is kept.
    pub fn replica(inner: Connection, busy_timeout: Duration) -> Self {
        Self { kept: None, inner, remote: false, hrana: None, busy_timeout }
    }

    /// Our client for the server this connection talks to.
    pub fn hrana(&self) -> Result<&hrana::Client> {
        self.hrana
            .as_deref()
            .ok_or_else(|| Error::Internal("a batch for a server on a local connection".into()))
    }

    /// Runs `batch` on the server in one request, sent again while it finds
    /// the database locked (`while_locked`): it must write nothing unless it
    /// all ran (it begins its transaction and commits it).
    pub async fn run_while_locked(&self, batch: &hrana::Batch) -> Result<hrana::Outcome> {
        let client = self.hrana()?;
        self.while_locked(|| std::future::ready(client.run(batch.clone()))).await
    }

    /// Runs `attempt`, and on a server runs it again while it finds the
    /// database locked by another connection's write transaction, for up to
    /// the busy timeout: sqld answers "database is locked" at once, where a
    /// local file's busy handler would wait. `attempt` must change nothing when
    /// it fails that way (a batch whose transaction did not begin, or rolled back).
    pub async fn while_locked<T, F, Fut>(&self, mut attempt: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let started = Instant::now();
        let mut pause = Duration::from_millis(1);
        loop {
            match attempt().await {
                Err(err) if self.is_remote() && err.is_locked() && started.elapsed() < self.busy_timeout => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(50));
                }
                other => return other,
            }
        }
    }

    /// The kept statement for `sql`, prepared on first use; `None` on a server.
    async fn statement(&self, sql: &str) -> Result<Option<Arc<Statement>>> {
        let Some(kept) = &self.kept else { return Ok(None) };
        if let Some(stmt) = kept.lock().get(sql) {
            return Ok(Some(Arc::clone(stmt)));
        }
        let stmt = Arc::new(self.inner.prepare(sql).await?);
        let mut kept = kept.lock();
        if kept.len() >= KEPT {
            kept.clear();
        }
        kept.insert(sql.into(), Arc::clone(&stmt));
        Ok(Some(stmt))
    }

    /// `Connection::query` through a kept statement.
    pub async fn query_kept(&self, sql: &str, params: impl IntoParams) -> Result<KeptRows> {
        self.query_on(&self.inner, sql, params).await
    }

    /// `Connection::query`, without keeping the statement; on a server, one
    /// round trip.
    pub async fn query(&self, sql: &str, params: impl IntoParams) -> Result<KeptRows> {
        self.query_unkept(&self.inner, sql, params).await
    }

    /// Whether this is a server connection.
    pub fn is_remote(&self) -> bool {
        self.remote
    }

    /// A read-only transaction: every statement in it reads one snapshot, and
    /// it takes no write lock.
    pub async fn begin_read(&self) -> Result<Tx<'_>> {
        let tx = self.inner.transaction_with_behavior(TransactionBehavior::Deferred).await?;
        Ok(Tx { conn: self, tx })
    }

    /// Starts an IMMEDIATE transaction; dropping it without `commit` rolls back.
    pub async fn begin(&self) -> Result<Tx<'_>> {
        let tx = self
            .while_locked(|| async {
                Ok(self.inner.transaction_with_behavior(TransactionBehavior::Immediate).await?)
            })
            .await?;
        Ok(Tx { conn: self, tx })
    }

    /// `query_kept` on `on`: this connection, or a transaction begun on it. A
    /// local transaction runs on the connection's own handle, so its kept
    /// statements run inside it; a server transaction is a stream of its own.
    async fn query_on(&self, on: &Connection, sql: &str, params: impl IntoParams) -> Result<KeptRows> {
        match self.statement(sql).await? {
            Some(stmt) => {
                stmt.reset();
                match stmt.query(params).await {
                    Ok(rows) => Ok(KeptRows { rows, stmt: Some(stmt) }),
                    Err(err) => {
                        stmt.reset();
                        Err(err.into())
                    }
                }
            }
            None => self.query_unkept(on, sql, params).await,
        }
    }

    async fn query_unkept(&self, on: &Connection, sql: &str, params: impl IntoParams) -> Result<KeptRows> {
        let rows = if self.is_remote() {
            batch_query(on, sql, params).await?
        } else {
            on.query(sql, params).await?
        };
        Ok(KeptRows { rows, stmt: None })
    }

    async fn execute_on(&self, on: &Connection, sql: &str, params: impl IntoParams) -> Result<u64> {
        match self.statement(sql).await? {
            Some(stmt) => {
                stmt.reset();
                let changed = stmt.execute(params).await;
                stmt.reset();
                Ok(changed? as u64)
            }
            None => Ok(on.execute(sql, params).await?),
        }
    }
}

/// A transaction on a `Conn`, with its kept statements.
pub(super) struct Tx<'a> {
    conn: &'a Conn,
    tx: Transaction,
}

impl Tx<'_> {
    pub async fn query_kept(&self, sql: &str, params: impl IntoParams) -> Result<KeptRows> {
        self.conn.query_on(&self.tx, sql, params).await
    }

    /// A query whose statement is not kept (its shape is seldom repeated).
    pub async fn query_once(&self, sql: &str, params: impl IntoParams) -> Result<KeptRows> {
        self.conn.query_unkept(&self.tx, sql, params).await
    }

    /// `query_once`, under the name `Connection::query` has.
    pub async fn query(&self, sql: &str, params: impl IntoParams) -> Result<KeptRows> {
        self.query_once(sql, params).await
    }

    pub async fn execute_kept(&self, sql: &str, params: impl IntoParams) -> Result<u64> {
        self.conn.execute_on(&self.tx, sql, params).await
    }

    /// Whether this transaction runs on a server.
    pub fn is_remote(&self) -> bool {
        self.conn.is_remote()
    }

    pub async fn commit(self) -> Result<()> {
        Ok(self.tx.commit().await?)
    }
}

impl Deref for Tx<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        &self.tx
    }
}

impl Deref for Conn {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        &self.inner
    }
}

/// A query on a server as one batch of SQL text (one round trip): its rows.
async fn batch_query(on: &Connection, sql: &str, params: impl IntoParams) -> Result<Rows> {
    let text = literal::inline(sql, params)?;
    let mut batch = on.execute_batch(&text).await?;
    batch.next_stmt_row().flatten().ok_or_else(|| Error::Internal(format!("no rows came back for {sql:?}")))
}

/// Rows of a kept statement; dropping them resets it (the rows are not read
/// after that).
pub(super) struct KeptRows {
    rows: Rows,
    stmt: Option<Arc<Statement>>,
}

impl Deref for KeptRows {
    type Target = Rows;

    fn deref(&self) -> &Rows {
        &self.rows
    }
}

impl DerefMut for KeptRows {
    fn deref_mut(&mut self) -> &mut Rows {
        &mut self.rows
    }
}

impl Drop for KeptRows {
    fn drop(&mut self) {
        if let Some(stmt) = &self.stmt {
            stmt.reset();
        }
    }
}
