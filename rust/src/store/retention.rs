//! Per-scope caps: after a save, each scope it touched keeps at most `max`
//! entries, evicting in a documented order. Eviction never crosses scopes.

use libsql::Value;

use super::conn::Tx;
use super::rows::opt_text;
use crate::config::Eviction;
use crate::entry::Micros;
use crate::error::Result;

#[derive(Debug, Clone)]
pub struct Retention {
    pub max_per_scope: usize,
    pub eviction: Eviction,
    /// `(id, when)` pairs of entries queries returned since the last write.
    pub returned: Vec<(i64, Micros)>,
}

/// Records when entries were last returned, then evicts the surplus of each of
/// `scopes`, never the entry `keep` (one just moved into a scope). Returns
/// `(id, seq)` per evicted entry. Runs inside the caller's transaction.
pub async fn enforce(
    tx: &Tx<'_>,
    retention: &Retention,
    scopes: &[Option<String>],
    keep: Option<i64>,
) -> Result<Vec<(i64, i64)>> {
    for (id, at) in &retention.returned {
        tx.execute_kept(
            "UPDATE entries SET last_returned = MAX(COALESCE(last_returned, 0), ?2) WHERE id = ?1",
            [*id, *at],
        )
        .await?;
    }
    let order = match retention.eviction {
        Eviction::Oldest => "ts, id",
        Eviction::LeastRecentlyReturned => "COALESCE(last_returned, created_at), id",
    };
    let max = i64::try_from(retention.max_per_scope).unwrap_or(i64::MAX);
    let mut evicted = Vec::new();
    for scope in scopes {
        let mut rows = tx
            .query("SELECT COUNT(*) FROM entries WHERE scope IS ?1", vec![opt_text(scope.as_deref())])
            .await?;
        let count: i64 = match rows.next().await? {
            Some(row) => row.get(0)?,
            None => 0,
        };
        drop(rows);
        if count <= max {
            continue;
        }
        let sql =
            format!("SELECT id FROM entries WHERE scope IS ?1 AND id IS NOT ?3 ORDER BY {order} LIMIT ?2");
        let keep = keep.map_or(Value::Null, Value::Integer);
        let mut rows =
            tx.query(&sql, vec![opt_text(scope.as_deref()), Value::Integer(count - max), keep]).await?;
        let mut ids: Vec<i64> = Vec::new();
        while let Some(row) = rows.next().await? {
            ids.push(row.get(0)?);
        }
        drop(rows);
        for id in ids {
            if let Some(seq) = super::timeline::remove(tx, id).await? {
                evicted.push((id, seq));
            }
        }
    }
    Ok(evicted)
}
