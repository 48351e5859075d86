//! The libSQL store: the only source of truth.
//!
//! Every write appends to the `changes` log in the same transaction, so a search
//! index can follow the database by applying changes after the last one it saw.
//!
//! The database is a local file (or `":memory:"`), or a libSQL server reached over
//! Hrana-over-HTTP (feature `remote`). A server has no PRAGMAs to tune and no busy
//! timeout to set; every connection is its own HTTP stream, and one that failed is
//! replaced so that a later call reconnects.

mod audit;
mod change_log;
mod conn;
mod dedupe;
mod encryption;
mod forget;
mod group;
mod hrana;
mod literal;
mod local;
mod read;
mod reads;
mod remote_write;
mod replica;
mod retention;
mod rows;
mod schema;
mod sources;
mod timeline;
mod vectors;
mod write;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use libsql::Database;
use parking_lot::{Mutex, RwLock};

use crate::config::Config;
use crate::entry::{Entry, Micros};
use crate::error::{Error, Result};
use crate::runtime::{block_on, runtime};
use conn::Conn;

pub use audit::Logged;
pub use change_log::Written;
pub use encryption::EncryptionKey;
pub use forget::{Forget, Forgotten};
pub use read::{ListFilter, PendingHead};
pub use reads::Read;
pub use retention::Retention;
pub use schema::SCHEMA_VERSION;
pub use sources::Linked;
pub use write::{EntryPatch, NewContent, Updated};

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
    pub embedding: Option<Vec<f32>>,
    /// An id given by the caller; `None` takes the next one.
    pub id: Option<i64>,
    /// `safety::injection::stamp` of the content.
    pub risk_stamp: i64,
    /// The key it fills (NFC), when it has one.
    pub key: Option<String>,
    /// Given validity; `None` for `valid_from` means the timestamp.
    pub valid_from: Option<Micros>,
    pub valid_to: Option<Micros>,
    /// The entry this one corrects.
    pub supersedes: Option<i64>,
    /// Where it came from (`sources.rs`).
    pub sources: Vec<crate::entry::Source>,
    pub cross_scope_sources: bool,
}

impl PreparedEntry {
    /// When it starts to hold.
    pub fn starts(&self) -> Micros {
        self.valid_from.unwrap_or(self.timestamp)
    }

    /// Whether writing it touches other entries' validity.
    pub fn in_timeline(&self) -> bool {
        self.key.is_some() || self.supersedes.is_some()
    }

    /// Whether it is written on its own, never in a group: it takes a place in
    /// a timeline, or has sources to link.
    pub fn alone(&self) -> bool {
        self.in_timeline() || !self.sources.is_empty()
    }

    /// The `valid_from` stored: its start, for an entry with a key, an
    /// interval or a predecessor; `None` for a plain entry, which holds always.
    pub fn stored_start(&self) -> Option<Micros> {
        (self.in_timeline() || self.valid_from.is_some() || self.valid_to.is_some()).then(|| self.starts())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeOp {
    Insert,
    Update,
    Delete,
}

impl ChangeOp {
    /// The operation a change-log row's `op` code names.
    fn from_code(code: i64) -> Result<Self> {
        match code {
            schema::OP_INSERT => Ok(Self::Insert),
            schema::OP_UPDATE => Ok(Self::Update),
            schema::OP_DELETE => Ok(Self::Delete),
            other => Err(invalid_op(other)),
        }
    }
}

/// One row of the change log, with the entry's current state.
#[derive(Debug, Clone)]
pub struct Change {
    pub seq: i64,
    pub entry_id: i64,
    pub op: ChangeOp,
    /// `None` for a delete, or when the entry no longer exists.
    pub entry: Option<Entry>,
    /// The entry's current embedding, if it has one.
    pub vector: Option<Vec<f32>>,
}

pub struct Store {
    /// The database: for a replica, the local replica (reads).
    db: Database,
    /// For a replica: the server, which takes every write.
    primary: Option<Database>,
    /// For a replica: its lock file, held while the store is open, and
    /// whether this handle wrote since the replica last synced.
    replica: Option<replica::Replica>,
    writer: Mutex<Conn>,
    /// Idle read connections; unused for `":memory:"`, where every connection
    /// would open a different database.
    readers: Option<Mutex<Vec<Conn>>>,
    /// For a file store, the one read connection that maps the file into
    /// memory: fetching entries by id (a query's hits) reads pages in place
    /// instead of copying each from the kernel. One, because each connection
    /// maps the file on its own and resident memory would count a page once per
    /// mapping; a lookup that finds it busy takes a plain reader. Scans (the
    /// index reading the change log, listing) keep to `readers`, so they never
    /// map the whole file.
    lookup: Option<Mutex<Lookup>>,
    busy_timeout: Duration,
    kind: Kind,
    /// Opened read-only: every write fails with a typed error before it starts.
    read_only: bool,
    /// An encrypted file's key, given to every connection (`encryption.rs`).
    key: RwLock<Option<EncryptionKey>>,
    /// The database file's path, for a file store (a rekey replaces the file).
    file: Option<String>,
    /// Held (shared) while a connection is in use; `rekey` takes it alone.
    gate: RwLock<()>,
    /// Our client for a server's hot batches, shared by its connections.
    hrana: Option<Arc<hrana::Client>>,
}

/// The memory-mapped lookup connection's state.
enum Lookup {
    Unopened,
    Idle(Conn),
    /// In use by another thread.
    Busy,
}

/// The mapped connection while a lookup uses it: given back when dropped, or,
/// if the lookup panicked, closed so that the next lookup opens another.
struct Lent<'a> {
    slot: &'a Mutex<Lookup>,
    /// `Some` until dropped.
    conn: Option<Conn>,
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        *self.slot.lock() = match self.conn.take() {
            Some(conn) if !std::thread::panicking() => Lookup::Idle(conn),
            _ => Lookup::Unopened,
        };
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Memory,
    File,
    Remote,
    /// A server, read through a local replica (`replica.rs`).
    Replica,
}

impl Store {
    pub fn open(config: &Config) -> Result<Self> {
        let busy_timeout = Duration::from_millis(config.busy_timeout_ms);
        let kind = if config.is_memory() {
            Kind::Memory
        } else if config.is_remote() && config.replica.is_some() {
            Kind::Replica
        } else if config.is_remote() {
            Kind::Remote
        } else {
            Kind::File
        };
        let mut primary = None;
        let mut replica = None;
        let (db, read_only) = match kind {
            Kind::Remote => (open_remote(config)?, false),
            Kind::Replica => {
                let (db, opened) = replica::open(config)?;
                primary = Some(open_remote(config)?);
                replica = Some(opened);
                (db, config.read_only)
            }
            Kind::File => {
                encryption::check_file(&config.path, config.encryption_key.as_ref())?;
                if let Some(key) = &config.encryption_key {
                    encryption::probe(&config.path, key)?;
                    if !config.read_only {
                        encryption::clear_rekey(&config.path);
                    }
                }
                local::open_file(&config.path, config.read_only)?
            }
            Kind::Memory => (block_on(libsql::Builder::new_local(&config.path).build())?, false),
        };
        let hrana = match kind {
            Kind::Remote | Kind::Replica => {
                Some(Arc::new(hrana::Client::new(&config.path, config.auth_token.as_deref())?))
            }
            Kind::File | Kind::Memory => None,
        };
        let writer = match (&primary, &hrana) {
            (Some(primary), Some(hrana)) => Conn::remote(primary.connect()?, Arc::clone(hrana), busy_timeout),
            (None, Some(hrana)) => Conn::remote(db.connect()?, Arc::clone(hrana), busy_timeout),
            _ => Conn::local(db.connect()?, busy_timeout),
        };
        let key = config.encryption_key.clone().filter(|_| kind == Kind::File);
        let first_reads = || -> Result<()> {
            if let Some(key) = &key {
                encryption::unlock(&writer, key)?;
            }
            configure(&writer, busy_timeout, kind, read_only)?;
            if read_only {
                schema::check_current(&writer)
            } else {
                schema::migrate(&writer)
            }
        };
        first_reads().map_err(|err| match &key {
            Some(_) => encryption::refused_key(err, &config.path),
            None => err,
        })?;
        if let Some(replica) = &replica {
            // The schema (and everything before this open) is read locally from now on.
            replica.sync(&db)?;
        }
        Ok(Self {
            db,
            primary,
            replica,
            writer: Mutex::new(writer),
            readers: (kind != Kind::Memory).then(|| Mutex::new(Vec::new())),
            // Mapped pages would bypass the cipher: an encrypted file is read through it.
            lookup: (kind == Kind::File && key.is_none()).then(|| Mutex::new(Lookup::Unopened)),
            busy_timeout,
            kind,
            read_only,
            key: RwLock::new(key),
            file: (kind == Kind::File).then(|| config.path.clone()),
            gate: RwLock::new(()),
            hrana,
        })
    }

    /// Whether the store was opened read-only.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Whether the database is a local file (not in memory, not a server).
    pub fn is_file(&self) -> bool {
        self.kind == Kind::File
    }

    /// Whether the database is a libSQL server (read directly or through a
    /// replica).
    pub fn is_remote(&self) -> bool {
        matches!(self.kind, Kind::Remote | Kind::Replica)
    }

    /// Whether reads go over the network (a server without a replica).
    pub fn reads_remote(&self) -> bool {
        self.kind == Kind::Remote
    }

    /// Whether reads come from an embedded replica, whose connections keep
    /// no prepared statements (`Conn::replica`).
    pub fn reads_replica(&self) -> bool {
        self.kind == Kind::Replica
    }

    /// Brings a replica up to date with the server now; the replication frame
    /// it reached. `None` for any other store, which has nothing to sync.
    pub fn sync(&self) -> Result<Option<u64>> {
        match &self.replica {
            Some(replica) => replica.sync(&self.db),
            None => Ok(None),
        }
    }

    /// A read connection (for a replica, to the local replica).
    fn connect(&self) -> Result<Conn> {
        let inner = self.db.connect()?;
        if let Some(key) = &*self.key.read() {
            encryption::unlock(&inner, key)?;
        }
        let conn = match (self.kind, &self.hrana) {
            (Kind::Remote, Some(hrana)) => Conn::remote(inner, Arc::clone(hrana), self.busy_timeout),
            (Kind::Replica, _) => Conn::replica(inner, self.busy_timeout),
            _ => Conn::local(inner, self.busy_timeout),
        };
        configure(&conn, self.busy_timeout, self.kind, self.read_only)?;
        Ok(conn)
    }

    /// A write connection: for a replica, to the server.
    fn connect_writer(&self) -> Result<Conn> {
        match (&self.primary, &self.hrana) {
            (Some(primary), Some(hrana)) => {
                Ok(Conn::remote(primary.connect()?, Arc::clone(hrana), self.busy_timeout))
            }
            _ => self.connect(),
        }
    }

    fn connect_mapped(&self) -> Result<Conn> {
        let conn = self.connect()?;
        block_on(conn.execute_batch(&format!("PRAGMA mmap_size = {MAPPED_BYTES};")))?;
        Ok(conn)
    }

    /// Runs `f` on the one write connection. A server connection that failed is
    /// replaced: its stream may be gone or hold a transaction being rolled back.
    fn with_writer<T>(&self, f: impl FnOnce(&Conn) -> Result<T>) -> Result<T> {
        if self.read_only {
            return Err(Error::plain_storage("this store is open read-only: it cannot be changed"));
        }
        let _open = self.gate.read_recursive();
        let mut conn = self.writer.lock();
        let result = f(&conn);
        if let Some(replica) = &self.replica {
            // Even a failed write may have committed before its answer was lost.
            replica.wrote();
        }
        if result.is_err() && self.is_remote() {
            if let Ok(fresh) = self.connect_writer() {
                let _ctx = runtime().enter();
                drop(std::mem::replace(&mut *conn, fresh));
            }
        }
        result
    }

    /// Runs `f` on an idle read connection (the writer's for `":memory:"`). On a
    /// server, a read that lost its connection is tried once more on a new one:
    /// reads are idempotent.
    fn with_reader<T>(&self, f: impl Fn(&Conn) -> Result<T>) -> Result<T> {
        let _open = self.gate.read_recursive();
        let Some(pool) = &self.readers else {
            return f(&self.writer.lock());
        };
        if let Some(replica) = &self.replica {
            // This handle reads its own writes.
            replica.catch_up(&self.db)?;
        }
        let pooled = pool.lock().pop();
        let conn = match pooled {
            Some(conn) => conn,
            None => self.connect()?,
        };
        let mut result = f(&conn);
        if self.reads_remote() && result.as_ref().is_err_and(Error::is_retryable) {
            let _ctx = runtime().enter();
            drop(conn);
            let conn = self.connect()?;
            result = f(&conn);
            if result.is_ok() {
                pool.lock().push(conn);
            }
            return result;
        }
        pool.lock().push(conn);
        result
    }

    /// `with_reader` on the connection that maps the file, when it is idle, for
    /// reads of a few rows by key.
    fn with_lookup<T>(&self, f: impl Fn(&Conn) -> Result<T>) -> Result<T> {
        let Some(slot) = &self.lookup else { return self.with_reader(f) };
        let _open = self.gate.read_recursive();
        // A statement of its own, so that the slot's lock is let go before `f` runs.
        let state = std::mem::replace(&mut *slot.lock(), Lookup::Busy);
        let conn = match state {
            Lookup::Idle(conn) => conn,
            Lookup::Unopened => match self.connect_mapped() {
                Ok(conn) => conn,
                Err(err) => {
                    *slot.lock() = Lookup::Unopened;
                    return Err(err);
                }
            },
            Lookup::Busy => return self.with_reader(f),
        };
        let lent = Lent { slot, conn: Some(conn) };
        f(lent.conn.as_ref().expect("a lent connection is held until dropped"))
    }
}

#[cfg(feature = "remote")]
fn open_remote(config: &Config) -> Result<Database> {
    let token = config.auth_token.clone().unwrap_or_default();
    // The `tls` connector serves `http://` too (`https_or_http`), and
    // `libsql://` becomes `https://`.
    Ok(block_on(libsql::Builder::new_remote(config.path.clone(), token).build())?)
}

#[cfg(not(feature = "remote"))]
fn open_remote(config: &Config) -> Result<Database> {
    Err(Error::invalid(format!(
        "{:?} is a server URL, but this build has no libSQL server support (feature \"remote\")",
        config.path
    )))
}

fn configure(conn: &libsql::Connection, busy_timeout: Duration, kind: Kind, read_only: bool) -> Result<()> {
    if matches!(kind, Kind::Remote | Kind::Replica) {
        // The server owns journaling and locking; a remote connection has neither
        // PRAGMAs to set nor a busy handler, and a replica's connection refuses
        // PRAGMAs that set a value (its file is the server's, frame for frame).
        return Ok(());
    }
    conn.busy_timeout(busy_timeout)?;
    if kind == Kind::File && read_only {
        // The journal mode is the file's own: setting it would write.
        block_on(conn.execute_batch("PRAGMA temp_store = MEMORY;"))?;
    } else if kind == Kind::File {
        // WAL lets readers run beside the writer; NORMAL syncs at checkpoints, which
        // keeps every committed transaction through a process crash.
        // secure_delete: what a delete or an update frees is overwritten with
        // zeros, so no byte of a deleted or replaced text stays in the file's
        // free space (`forget` relies on it; docs/forgetting.md).
        // page_size only takes in a new file (before WAL): 8 KiB pages hold a
        // 384-dimensional vector (1,536 bytes) in its row, where 4 KiB pages
        // spill each into an overflow page of its own.
        block_on(conn.execute_batch(
            "PRAGMA page_size = 8192; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
             PRAGMA temp_store = MEMORY; PRAGMA secure_delete = ON;",
        ))?;
    }
    Ok(())
}

/// How much of a file store a lookup connection maps (SQLite's `mmap_size`):
/// pages past it are read as before. Mapped pages a query touched count in the
/// process's resident memory while the kernel keeps them cached, but they are
/// the page cache's, shared and dropped under memory pressure.
const MAPPED_BYTES: u64 = 256 << 20;

pub fn now_micros() -> Micros {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

fn invalid_op(op: i64) -> Error {
    Error::Incompatible(format!("unknown change op {op}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn entry(content: &str) -> PreparedEntry {
        PreparedEntry {
            content: content.to_owned(),
            kind: "note".to_owned(),
            scope: Some("s".to_owned()),
            session_id: None,
            metadata: None,
            timestamp: 1,
            tokens: 3,
            expires_at: None,
            dedup_key: None,
            embedding: None,
            risk_stamp: 0,
            id: None,
            key: None,
            valid_from: None,
            valid_to: None,
            supersedes: None,
            sources: Vec::new(),
            cross_scope_sources: false,
        }
    }

    #[test]
    fn a_lookup_reads_the_same_rows_through_the_mapped_connection_or_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&Config::new(dir.path().join("m.db").to_string_lossy())).unwrap();
        let (written, _) = store.insert(&[entry("first"), entry("second")], None).unwrap();
        let ids: Vec<i64> = written.iter().map(|w| w.id).collect();
        let contents = |got: Vec<Option<Entry>>| -> Vec<String> {
            got.into_iter().map(|e| e.map_or_else(|| "-".to_owned(), |e| e.content)).collect()
        };
        let asked = [ids[1], 999, ids[0]];
        let want = vec!["second".to_owned(), "-".to_owned(), "first".to_owned()];
        assert_eq!(contents(store.fetch(&asked).unwrap()), want);
        assert!(matches!(*store.lookup.as_ref().unwrap().lock(), Lookup::Idle(_)));
        // The lookup connection maps the file; while it is held, a lookup reads
        // through a plain reader, which does not.
        let mapped = |conn: &Conn| -> Result<i64> {
            block_on(async {
                let mut rows = conn.query_kept("PRAGMA mmap_size", ()).await?;
                Ok(rows.next().await?.map_or(0, |row| row.get::<i64>(0).unwrap_or(0)))
            })
        };
        let (outer, (inner, beside)) = store
            .with_lookup(|conn| {
                Ok((mapped(conn)?, store.with_lookup(|c| Ok((mapped(c)?, store.fetch(&asked)?)))?))
            })
            .unwrap();
        assert_eq!((outer, inner), (MAPPED_BYTES as i64, 0));
        assert_eq!(contents(beside), want);
        assert!(matches!(*store.lookup.as_ref().unwrap().lock(), Lookup::Idle(_)));
        // The mapped connection sees a write made after it was opened.
        let (later, _) = store.insert(&[entry("third")], None).unwrap();
        assert_eq!(contents(store.fetch(&[later[0].id]).unwrap()), vec!["third".to_owned()]);
        // A lookup that panics leaves no connection lent out forever.
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            store.with_lookup(|_| -> Result<()> { panic!("a lookup failed midway") })
        }));
        assert!(panicked.is_err());
        assert!(matches!(*store.lookup.as_ref().unwrap().lock(), Lookup::Unopened));
        assert_eq!(contents(store.fetch(&asked).unwrap()), want);
        assert!(matches!(*store.lookup.as_ref().unwrap().lock(), Lookup::Idle(_)));
    }

    #[test]
    fn only_a_file_store_maps_its_lookups() {
        let memory = Store::open(&Config::new(":memory:")).unwrap();
        assert!(memory.lookup.is_none());
        let (written, _) = memory.insert(&[entry("kept in memory")], None).unwrap();
        let got = memory.fetch(&[written[0].id]).unwrap();
        assert_eq!(got[0].as_ref().map(|e| e.content.as_str()), Some("kept in memory"));
    }
}
