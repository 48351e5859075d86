//! The database schema and its migrations.
//!
//! `PRAGMA user_version` holds the number of migrations applied. Each step runs in
//! its own transaction; a store written by a newer version is refused, not guessed at.

use libsql::Connection;

use crate::error::{Error, Result};
use crate::runtime::block_on;

/// Migration `i` takes the schema from version `i` to `i + 1`. Append only.
pub const MIGRATIONS: &[&str] = &[
    // 1: entries, and the ordered change log that every search index follows.
    r"
    CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    CREATE TABLE entries (
        id         INTEGER PRIMARY KEY AUTOINCREMENT,
        scope      TEXT,
        kind       TEXT NOT NULL,
        session_id TEXT,
        content    TEXT NOT NULL,
        metadata   TEXT,
        ts         INTEGER NOT NULL,
        tokens     INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        -- A stable hash of the normalised content, for duplicate detection.
        content_key INTEGER NOT NULL
    );
    CREATE INDEX entries_scope_ts ON entries (scope, ts);
    CREATE INDEX entries_ts ON entries (ts, id);
    CREATE INDEX entries_dedup ON entries (content_key, scope);
    CREATE TABLE changes (
        seq      INTEGER PRIMARY KEY AUTOINCREMENT,
        entry_id INTEGER NOT NULL,
        op       INTEGER NOT NULL
    );
    ",
    // 2: expiry, and when a query last returned an entry (for LRU eviction).
    r"
    ALTER TABLE entries ADD COLUMN expires_at INTEGER;
    ALTER TABLE entries ADD COLUMN last_returned INTEGER;
    CREATE INDEX entries_expiry ON entries (expires_at) WHERE expires_at IS NOT NULL;
    ",
    // 3: one embedding per entry, as little-endian float32 (libSQL's F32_BLOB
    // layout). Which embedder made them is recorded in `meta`. A vector never
    // outlives its entry.
    r"
    CREATE TABLE embeddings (
        entry_id INTEGER PRIMARY KEY,
        vector   F32_BLOB NOT NULL
    );
    CREATE TRIGGER entries_drop_embedding AFTER DELETE ON entries BEGIN
        DELETE FROM embeddings WHERE entry_id = OLD.id;
    END;
    ",
    // 4: the prompt-injection check made when the content was written
    // (`safety::injection::stamp`), so that reading it back need not repeat it.
    // NULL for older rows, which are checked when read.
    r"
    ALTER TABLE entries ADD COLUMN risks INTEGER;
    ",
    // 5: the identity a search index is tied to (`index/identity.rs`): a random
    // id for this database, made once (a copy of the file keeps it), and a
    // random nonce on every change, so that two histories that share an id and
    // a change number still differ there. SQLite adds no column with a
    // non-constant default, so the log is copied into a table that has one,
    // keeping every number and the AUTOINCREMENT counter.
    r"
    INSERT OR IGNORE INTO meta (key, value) VALUES ('database_id', lower(hex(randomblob(16))));
    CREATE TABLE changes_next (
        seq      INTEGER PRIMARY KEY AUTOINCREMENT,
        entry_id INTEGER NOT NULL,
        op       INTEGER NOT NULL,
        nonce    INTEGER NOT NULL DEFAULT (random())
    );
    INSERT INTO changes_next (seq, entry_id, op) SELECT seq, entry_id, op FROM changes ORDER BY seq;
    DELETE FROM sqlite_sequence WHERE name = 'changes_next';
    UPDATE sqlite_sequence SET name = 'changes_next' WHERE name = 'changes';
    DROP TABLE changes;
    ALTER TABLE changes_next RENAME TO changes;
    ",
    // 6: when `update` last changed an entry (NULL: never).
    r"
    ALTER TABLE entries ADD COLUMN updated_at INTEGER;
    ",
    // 7: keys and validity time (`store/timeline.rs`). `valid_from` NULL means
    // the entry's timestamp, so existing rows need no rewrite; `valid_to` NULL
    // is open. At most one version of a key is open in a scope.
    r"
    ALTER TABLE entries ADD COLUMN key TEXT;
    ALTER TABLE entries ADD COLUMN valid_from INTEGER;
    ALTER TABLE entries ADD COLUMN valid_to INTEGER;
    ALTER TABLE entries ADD COLUMN superseded_by INTEGER;
    CREATE INDEX entries_key ON entries (key, scope) WHERE key IS NOT NULL;
    CREATE UNIQUE INDEX entries_key_open ON entries (ifnull(scope, char(0)), key)
        WHERE key IS NOT NULL AND valid_to IS NULL;
    CREATE INDEX entries_superseded ON entries (superseded_by) WHERE superseded_by IS NOT NULL;
    ",
    // 8: provenance (`store/sources.rs`: what each entry rests on, indexed both
    // ways; a source's deletion leaves the links of what was derived from it),
    // the read audit (`store/reads.rs`: what each query returned), the
    // audit log and forgetting (`store/forget.rs`): when each change
    // was made and in which scope (NULL for changes logged before), the forget
    // a deletion belongs to (the log keeps ids, never content), and each
    // forget's receipt.
    r"
    ALTER TABLE changes ADD COLUMN at INTEGER;
    ALTER TABLE changes ADD COLUMN scope TEXT;
    ALTER TABLE changes ADD COLUMN forget TEXT;
    CREATE TABLE sources (
        entry_id   INTEGER NOT NULL,
        source_id  INTEGER,
        ref        TEXT,
        span_start INTEGER,
        span_end   INTEGER,
        CHECK ((source_id IS NULL) <> (ref IS NULL))
    );
    CREATE INDEX sources_entry ON sources (entry_id);
    CREATE INDEX sources_source ON sources (source_id) WHERE source_id IS NOT NULL;
    CREATE INDEX sources_ref ON sources (ref) WHERE ref IS NOT NULL;
    CREATE TRIGGER entries_drop_sources AFTER DELETE ON entries BEGIN
        DELETE FROM sources WHERE entry_id = OLD.id;
    END;
    CREATE TABLE forgets (
        id        TEXT PRIMARY KEY,
        at        INTEGER NOT NULL,
        entries   INTEGER NOT NULL,
        vectors   INTEGER NOT NULL,
        reindexed INTEGER NOT NULL,
        scopes    TEXT NOT NULL
    );
    CREATE TABLE reads (
        seq        INTEGER PRIMARY KEY AUTOINCREMENT,
        at         INTEGER NOT NULL,
        scopes     TEXT,
        query_hash TEXT NOT NULL,
        query      TEXT,
        ids        TEXT NOT NULL
    );
    CREATE INDEX reads_at ON reads (at);
    ",
    // 9: the open-key index without a function call. SQLite takes a statement
    // that calls a function (char(0) here) as one that may stop halfway, and
    // so kept a statement journal for every insert of several rows into
    // entries: a copy of each page the insert touched. A blob never equals
    // text, and labels refuse control characters, so no scope ever matched
    // char(0) either.
    r"
    DROP INDEX IF EXISTS entries_key_open;
    CREATE UNIQUE INDEX entries_key_open ON entries (ifnull(scope, x'00'), key)
        WHERE key IS NOT NULL AND valid_to IS NULL;
    ",
];

/// The `meta` key of the database's random id (migration 5).
const DATABASE_ID: &str = "database_id";

pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Change-log operations.
pub const OP_INSERT: i64 = 1;
pub const OP_UPDATE: i64 = 2;
pub const OP_DELETE: i64 = 3;

pub fn migrate(conn: &Connection) -> Result<()> {
    block_on(async {
        let version = user_version(conn).await?;
        if version > SCHEMA_VERSION {
            return Err(Error::Incompatible(format!(
                "the database has schema version {version}, newer than this library's {SCHEMA_VERSION}; upgrade contextforge"
            )));
        }
        for (i, step) in (0_i64..).zip(MIGRATIONS).skip(usize::try_from(version).unwrap_or(0)) {
            let tx = conn.transaction_with_behavior(libsql::TransactionBehavior::Immediate).await?;
            // Another process may have migrated while we waited for the lock.
            if user_version(&tx).await? > i {
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

/// For a read-only store, which cannot be migrated: its schema must be this
/// version's.
pub fn check_current(conn: &Connection) -> Result<()> {
    let version = block_on(user_version(conn))?;
    if version == SCHEMA_VERSION {
        return Ok(());
    }
    let why = if version > SCHEMA_VERSION { "newer" } else { "older" };
    Err(Error::Incompatible(format!(
        "the read-only database has schema version {version}, {why} than this library's \
         {SCHEMA_VERSION}; open it writable once to upgrade it, or use a matching contextforge"
    )))
}

async fn user_version(conn: &Connection) -> Result<i64> {
    let mut rows = conn.query("PRAGMA user_version", ()).await?;
    match rows.next().await? {
        Some(row) => Ok(row.get(0)?),
        None => Ok(0),
    }
}

impl super::Store {
    /// The database's random id (`meta`), which a copy of the file keeps and
    /// another database does not share; `None` only if someone deleted it.
    pub fn database_id(&self) -> Result<Option<String>> {
        self.meta(DATABASE_ID)
    }

    /// The random nonce of change `seq`, or `None` when the log has no such change.
    pub fn change_nonce(&self, seq: i64) -> Result<Option<i64>> {
        self.with_reader(|conn| {
            block_on(async {
                let mut rows = conn.query_kept("SELECT nonce FROM changes WHERE seq = ?1", [seq]).await?;
                match rows.next().await? {
                    Some(row) => Ok(Some(row.get(0)?)),
                    None => Ok(None),
                }
            })
        })
    }
}
