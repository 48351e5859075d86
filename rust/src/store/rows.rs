//! Row <-> value conversions.

use libsql::{Row, Value};

use crate::entry::Entry;
use crate::error::Result;

pub const ENTRY_COLUMNS: &str =
    "id, content, kind, scope, session_id, metadata, ts, tokens, expires_at";

/// Reads an entry from `ENTRY_COLUMNS` starting at column `at`.
pub fn entry(row: &Row, at: i32) -> Result<Entry> {
    Ok(Entry {
        id: row.get(at)?,
        content: row.get(at + 1)?,
        kind: row.get(at + 2)?,
        scope: row.get(at + 3)?,
        session_id: row.get(at + 4)?,
        metadata: row.get(at + 5)?,
        timestamp: row.get(at + 6)?,
        tokens: row.get(at + 7)?,
        expires_at: row.get(at + 8)?,
    })
}

pub fn opt_text(value: Option<&str>) -> Value {
    value.map_or(Value::Null, |s| Value::Text(s.to_owned()))
}

pub fn text(value: &str) -> Value {
    Value::Text(value.to_owned())
}
