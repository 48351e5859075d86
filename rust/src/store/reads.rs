//! The read audit's table: one row per `query` or `context` the engine
//! answered with the audit on (`engine/audit.rs`), kept for a retention period.

use libsql::Value;

use super::rows::opt_text;
use super::Store;
use crate::entry::Micros;
use crate::error::{Error, Result};
use crate::runtime::block_on;

/// What one query returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    pub at: Micros,
    /// The scopes searched; `None`: every scope (in a list, `None` is global).
    pub scopes: Option<Vec<Option<String>>>,
    /// A keyed hash of the query's text (hex).
    pub query_hash: String,
    /// The text itself, when the store keeps it.
    pub query: Option<String>,
    /// The ids returned, in order: what went into a prompt.
    pub ids: Vec<i64>,
}

fn internal(err: serde_json::Error) -> Error {
    Error::Internal(err.to_string())
}

impl Store {
    /// Appends `reads` and drops those recorded before `keep_after`, in one transaction.
    pub fn record_reads(&self, reads: &[Read], keep_after: Micros) -> Result<()> {
        self.with_writer(|conn| {
            block_on(async {
                let tx = conn.begin().await?;
                for read in reads {
                    let scopes =
                        read.scopes.as_ref().map(serde_json::to_string).transpose().map_err(internal)?;
                    tx.execute_kept(
                        "INSERT INTO reads (at, scopes, query_hash, query, ids) VALUES (?1, ?2, ?3, ?4, ?5)",
                        vec![
                            Value::Integer(read.at),
                            opt_text(scopes.as_deref()),
                            Value::Text(read.query_hash.clone()),
                            opt_text(read.query.as_deref()),
                            Value::Text(serde_json::to_string(&read.ids).map_err(internal)?),
                        ],
                    )
                    .await?;
                }
                tx.execute_kept("DELETE FROM reads WHERE at < ?1", [keep_after]).await?;
                tx.commit().await?;
                Ok(())
            })
        })
    }

    /// Up to `limit` reads after `after` (a `seq`), oldest first, with their seqs.
    pub fn reads(&self, after: i64, limit: usize) -> Result<Vec<(i64, Read)>> {
        let sql = format!(
            "SELECT seq, at, scopes, query_hash, query, ids FROM reads WHERE seq > ?1 ORDER BY seq LIMIT {limit}"
        );
        self.with_reader(|conn| {
            block_on(async {
                let mut rows = conn.query(&sql, [after]).await?;
                let mut out = Vec::new();
                while let Some(row) = rows.next().await? {
                    let scopes: Option<String> = row.get(2)?;
                    let ids: String = row.get(5)?;
                    let parse = |e: serde_json::Error| Error::Internal(format!("a read audit row: {e}"));
                    out.push((
                        row.get(0)?,
                        Read {
                            at: row.get(1)?,
                            scopes: scopes.map(|s| serde_json::from_str(&s)).transpose().map_err(parse)?,
                            query_hash: row.get(3)?,
                            query: row.get(4)?,
                            ids: serde_json::from_str(&ids).map_err(parse)?,
                        },
                    ));
                }
                Ok(out)
            })
        })
    }
}
