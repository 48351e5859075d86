//! The change log every write appends to in its own transaction, which the
//! search index follows (see `index/follow.rs`).

use libsql::Value;

use super::conn::Tx;
use crate::error::{Error, Result};

/// The outcome of saving one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    pub id: i64,
    /// The change that created it, or `None` when the save duplicated an entry
    /// already stored (see `dedupe`) and its id was returned instead.
    pub seq: Option<i64>,
}

/// Appends one change to the log, in the caller's transaction; returns its `seq`.
pub(super) async fn log_change(conn: &Tx<'_>, entry_id: i64, op: i64) -> Result<i64> {
    returned_id(
        conn,
        "INSERT INTO changes (entry_id, op) VALUES (?1, ?2) RETURNING seq",
        vec![Value::Integer(entry_id), Value::Integer(op)],
    )
    .await
}

/// Appends the deletion of an entry that `forget` removed: a tombstone that
/// names the forget, never the content.
pub(super) async fn log_forgotten(conn: &Tx<'_>, entry_id: i64, forget: &str) -> Result<i64> {
    returned_id(
        conn,
        "INSERT INTO changes (entry_id, op, forget) VALUES (?1, ?2, ?3) RETURNING seq",
        vec![
            Value::Integer(entry_id),
            Value::Integer(super::schema::OP_DELETE),
            Value::Text(forget.to_owned()),
        ],
    )
    .await
}

/// Runs an `INSERT ... RETURNING` of one row and reads the integer it returns.
pub(super) async fn returned_id(conn: &Tx<'_>, sql: &str, params: Vec<Value>) -> Result<i64> {
    let mut rows = conn.query_kept(sql, params).await?;
    let row = rows.next().await?.ok_or_else(|| Error::Internal(format!("no row returned by {sql:?}")))?;
    Ok(row.get(0)?)
}
