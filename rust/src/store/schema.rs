//! The database schema and its migrations.
//!
//! `PRAGMA user_version` holds the number of migrations applied. Each step runs in
//! its own transaction; a store written by a newer version is refused, not guessed at.

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
        created_at INTEGER NOT NULL
    );
    CREATE INDEX entries_scope_ts ON entries (scope, ts);
    CREATE TABLE changes (
        seq      INTEGER PRIMARY KEY AUTOINCREMENT,
        entry_id INTEGER NOT NULL,
        op       INTEGER NOT NULL
    );
    ",
];

pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Change-log operations.
pub const OP_INSERT: i64 = 1;
pub const OP_UPDATE: i64 = 2;
pub const OP_DELETE: i64 = 3;
