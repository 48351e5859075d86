//! The libSQL store: the only source of truth.
//!
//! Every write appends to the `changes` log in the same transaction, so a search
//! index can follow the database by applying changes after the last one it saw.

mod schema;

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use libsql::{Connection, Database, Value};
use parking_lot::Mutex;

use crate::config::Config;
use crate::entry::{Entry, Micros};
use crate::error::{Error, Result};
use crate::runtime::block_on;

pub use schema::SCHEMA_VERSION;
use schema::{OP_DELETE, OP_INSERT, OP_UPDATE};

/// An entry ready to be written: validated, scrubbed, counted.
#[derive(Debug, Clone)]
pub struct PreparedEntry {
    pub content: String,
    pub kind: String,
    pub scope: Option<String>,
    pub session_id: Option<String>,
    pub metadata: Option<String>,
    pub timestamp: Micros,
    pub tokens: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeOp {
    Insert,
    Update,
    Delete,
}

/// One row of the change log, with the entry's current state.
#[derive(Debug, Clone)]
pub struct Change {
    pub seq: i64,
    pub entry_id: i64,
    pub op: ChangeOp,
    /// `None` for a delete, or when the entry no longer exists.
    pub entry: Option<Entry>,
}

const ENTRY_COLUMNS: &str = "id, content, kind, scope, session_id, metadata, ts, tokens";

pub struct Store {
    db: Database,
    writer: Mutex<Connection>,
    /// Idle read connections; empty and unused for `":memory:"`, where every
    /// connection would open a different database.
    readers: Option<Mutex<Vec<Connection>>>,
    busy_timeout: Duration,
}

impl Store {
    pub fn open(config: &Config) -> Result<Self> {
        let busy_timeout = Duration::from_millis(config.busy_timeout_ms);
        let db = block_on(libsql::Builder::new_local(&config.path).build())?;
        let writer = db.connect()?;
        configure(&writer, busy_timeout, !config.is_memory())?;
        migrate(&writer)?;
        Ok(Self {
            db,
            writer: Mutex::new(writer),
            readers: (!config.is_memory()).then(|| Mutex::new(Vec::new())),
            busy_timeout,
        })
    }

    /// Writes entries and their change-log rows in one transaction.
    /// Returns `(id, seq)` per entry, in order.
    pub fn insert(&self, entries: &[PreparedEntry]) -> Result<Vec<(i64, i64)>> {
        let conn = self.writer.lock();
        block_on(async {
            let tx = conn.transaction().await?;
            let now = now_micros();
            let mut out = Vec::with_capacity(entries.len());
            for e in entries {
                tx.execute(
                    "INSERT INTO entries (content, kind, scope, session_id, metadata, ts, tokens, created_at) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                    vec![
                        Value::from(e.content.as_str()),
                        Value::from(e.kind.as_str()),
                        opt_text(e.scope.as_deref()),
                        opt_text(e.session_id.as_deref()),
                        opt_text(e.metadata.as_deref()),
                        Value::Integer(e.timestamp),
                        Value::Integer(i64::from(e.tokens)),
                        Value::Integer(now),
                    ],
                )
                .await?;
                let id = tx.last_insert_rowid();
                let seq = log_change(&tx, id, OP_INSERT).await?;
                out.push((id, seq));
            }
            tx.commit().await?;
            Ok(out)
        })
    }

    /// Entries by id, in the order asked; missing ids are skipped.
    pub fn fetch(&self, ids: &[i64]) -> Result<Vec<Entry>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let placeholders = vec!["?"; ids.len()].join(",");
        let sql = format!("SELECT {ENTRY_COLUMNS} FROM entries WHERE id IN ({placeholders})");
        let params: Vec<Value> = ids.iter().map(|&id| Value::Integer(id)).collect();
        let mut found: HashMap<i64, Entry> = self.with_reader(|conn| {
            block_on(async {
                let mut rows = conn.query(&sql, params).await?;
                let mut found = HashMap::with_capacity(ids.len());
                while let Some(row) = rows.next().await? {
                    let entry = entry_from_row(&row)?;
                    found.insert(entry.id, entry);
                }
                Ok(found)
            })
        })?;
        Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
    }

    /// The newest change number, or 0 for an empty log.
    pub fn head(&self) -> Result<i64> {
        self.with_reader(|conn| {
            block_on(async {
                let mut rows = conn.query("SELECT COALESCE(MAX(seq), 0) FROM changes", ()).await?;
                match rows.next().await? {
                    Some(row) => Ok(row.get::<i64>(0)?),
                    None => Ok(0),
                }
            })
        })
    }

    /// Up to `limit` changes after `after`, oldest first, each with the entry's
    /// current state.
    pub fn changes_since(&self, after: i64, limit: usize) -> Result<Vec<Change>> {
        let sql = format!(
            "SELECT c.seq, c.entry_id, c.op, e.id, e.content, e.kind, e.scope, e.session_id, \
             e.metadata, e.ts, e.tokens \
             FROM changes c LEFT JOIN entries e ON e.id = c.entry_id \
             WHERE c.seq > ?1 ORDER BY c.seq LIMIT {limit}"
        );
        self.with_reader(|conn| {
            block_on(async {
                let mut rows = conn.query(&sql, [after]).await?;
                let mut out = Vec::new();
                while let Some(row) = rows.next().await? {
                    let op = match row.get::<i64>(2)? {
                        OP_INSERT => ChangeOp::Insert,
                        OP_UPDATE => ChangeOp::Update,
                        OP_DELETE => ChangeOp::Delete,
                        other => {
                            return Err(Error::Incompatible(format!("unknown change op {other}")))
                        }
                    };
                    let present = row.get::<Option<i64>>(3)?.is_some();
                    let entry = if op != ChangeOp::Delete && present {
                        Some(entry_from_columns(&row, 3)?)
                    } else {
                        None
                    };
                    out.push(Change { seq: row.get(0)?, entry_id: row.get(1)?, op, entry });
                }
                Ok(out)
            })
        })
    }

    pub fn count(&self) -> Result<u64> {
        self.with_reader(|conn| {
            block_on(async {
                let mut rows = conn.query("SELECT COUNT(*) FROM entries", ()).await?;
                match rows.next().await? {
                    Some(row) => Ok(row.get::<u64>(0)?),
                    None => Ok(0),
                }
            })
        })
    }

    /// Runs `f` on an idle read connection (the writer's for `":memory:"`).
    fn with_reader<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let Some(pool) = &self.readers else {
            return f(&self.writer.lock());
        };
        let conn = match pool.lock().pop() {
            Some(conn) => conn,
            None => {
                let conn = self.db.connect()?;
                configure(&conn, self.busy_timeout, true)?;
                conn
            }
        };
        let result = f(&conn);
        pool.lock().push(conn);
        result
    }
}

fn configure(conn: &Connection, busy_timeout: Duration, file: bool) -> Result<()> {
    conn.busy_timeout(busy_timeout)?;
    if file {
        // WAL lets readers run beside the writer; NORMAL syncs at checkpoints, which
        // keeps every committed transaction through a process crash.
        block_on(conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA temp_store = MEMORY;",
        ))?;
    }
    Ok(())
}

fn migrate(conn: &Connection) -> Result<()> {
    block_on(async {
        let mut rows = conn.query("PRAGMA user_version", ()).await?;
        let version: i64 = match rows.next().await? {
            Some(row) => row.get(0)?,
            None => 0,
        };
        drop(rows);
        if version > SCHEMA_VERSION {
            return Err(Error::Incompatible(format!(
                "the database has schema version {version}, newer than this library's {SCHEMA_VERSION}; upgrade contextforge"
            )));
        }
        for (i, step) in schema::MIGRATIONS.iter().enumerate().skip(version as usize) {
            let tx = conn.transaction_with_behavior(libsql::TransactionBehavior::Immediate).await?;
            // Another process may have migrated while we waited for the lock.
            let mut rows = tx.query("PRAGMA user_version", ()).await?;
            let current: i64 = match rows.next().await? {
                Some(row) => row.get(0)?,
                None => 0,
            };
            drop(rows);
            if current > i as i64 {
                tx.rollback().await?;
                continue;
            }
            tx.execute_batch(step).await?;
            tx.execute_batch(&format!("PRAGMA user_version = {}", i + 1)).await?;
            tx.commit().await?;
        }
        Ok(())
    })
}

async fn log_change(conn: &Connection, entry_id: i64, op: i64) -> Result<i64> {
    conn.execute("INSERT INTO changes (entry_id, op) VALUES (?1, ?2)", [entry_id, op])
        .await?;
    Ok(conn.last_insert_rowid())
}

fn entry_from_row(row: &libsql::Row) -> Result<Entry> {
    entry_from_columns(row, 0)
}

fn entry_from_columns(row: &libsql::Row, at: i32) -> Result<Entry> {
    Ok(Entry {
        id: row.get(at)?,
        content: row.get(at + 1)?,
        kind: row.get(at + 2)?,
        scope: row.get(at + 3)?,
        session_id: row.get(at + 4)?,
        metadata: row.get(at + 5)?,
        timestamp: row.get(at + 6)?,
        tokens: row.get(at + 7)?,
    })
}

fn opt_text(value: Option<&str>) -> Value {
    value.map_or(Value::Null, |s| Value::Text(s.to_owned()))
}

pub fn now_micros() -> Micros {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}
