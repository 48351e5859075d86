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

/// Appends one change to the log, in the caller's transaction, with the time
/// and the entry's scope as they are now; returns its `seq`. A deletion is
/// logged by `log_delete`, which is told the scope.
pub(super) async fn log_change(conn: &Tx<'_>, entry_id: i64, op: i64) -> Result<i64> {
    returned_id(
        conn,
        "INSERT INTO changes (entry_id, op, at, scope) \
         VALUES (?1, ?2, ?3, (SELECT scope FROM entries WHERE id = ?1)) RETURNING seq",
        vec![Value::Integer(entry_id), Value::Integer(op), Value::Integer(super::now_micros())],
    )
    .await
}

/// Appends the deletion of an entry of `scope`; with `forget`, as part of that
/// forget: a tombstone that names the forget, never the content.
pub(super) async fn log_delete(
    conn: &Tx<'_>,
    entry_id: i64,
    scope: Option<&str>,
    forget: Option<&str>,
) -> Result<i64> {
    returned_id(
        conn,
        "INSERT INTO changes (entry_id, op, at, scope, forget) VALUES (?1, ?2, ?3, ?4, ?5) RETURNING seq",
        vec![
            Value::Integer(entry_id),
            Value::Integer(super::schema::OP_DELETE),
            Value::Integer(super::now_micros()),
            super::rows::opt_text(scope),
            super::rows::opt_text(forget),
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
