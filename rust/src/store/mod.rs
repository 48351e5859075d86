//! The libSQL store: the only source of truth.
//!
//! Every write appends to the `changes` log in the same transaction, so a search
//! index can follow the database by applying changes after the last one it saw.

mod read;
mod retention;
mod rows;
mod schema;
mod write;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use libsql::{Connection, Database};
use parking_lot::Mutex;

use crate::config::Config;
use crate::entry::{Entry, Micros};
use crate::error::{Error, Result};
use crate::runtime::block_on;

pub use read::ListFilter;
pub use retention::{Eviction, Retention};
pub use schema::SCHEMA_VERSION;
pub use write::{EntryPatch, Written};

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
    pub expires_at: Option<Micros>,
    /// The normalised content's key; `None` skips duplicate detection.
    pub dedup_key: Option<(i64, String)>,
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

pub struct Store {
    db: Database,
    writer: Mutex<Connection>,
    /// Idle read connections; unused for `":memory:"`, where every connection
    /// would open a different database.
    readers: Option<Mutex<Vec<Connection>>>,
    busy_timeout: Duration,
}

impl Store {
    pub fn open(config: &Config) -> Result<Self> {
        let busy_timeout = Duration::from_millis(config.busy_timeout_ms);
        let db = block_on(libsql::Builder::new_local(&config.path).build())?;
        let writer = db.connect()?;
        configure(&writer, busy_timeout, !config.is_memory())?;
        schema::migrate(&writer)?;
        Ok(Self {
            db,
            writer: Mutex::new(writer),
            readers: (!config.is_memory()).then(|| Mutex::new(Vec::new())),
            busy_timeout,
        })
    }

    /// Runs `f` on the one write connection.
    fn with_writer<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        f(&self.writer.lock())
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

pub fn now_micros() -> Micros {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

fn invalid_op(op: i64) -> Error {
    Error::Incompatible(format!("unknown change op {op}"))
}
