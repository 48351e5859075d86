//! `forget`: deleting entries so that no byte of their content stays in the
//! database's files.
//!
//! The rows go in one transaction with `secure_delete` on (set on every
//! writable file connection, so what any delete or update freed was zeroed
//! too). The log keeps a tombstone per entry: its id and the forget's id. The
//! entries whose index context held a forgotten entry's words (the next turns
//! of its session) are logged as updated, so the index rewrites them. After the
//! commit, a checkpoint copies the WAL into the file and truncates it.
//! Removing what the search index held is the index's part (`index::purge`).

use libsql::Value;

use super::change_log::log_change;
use super::conn::Tx;
use super::rows::{opt_text, text};
use super::schema::OP_UPDATE;
use super::{now_micros, Store};
use crate::entry::Micros;
use crate::error::{Error, Result};
use crate::index::schema::{CONTEXT_TURNS, CONTEXT_WINDOW_US};
use crate::runtime::block_on;

/// What to forget: the entries that match every criterion given.
#[derive(Debug, Clone, Default)]
pub struct Forget {
    pub ids: Option<Vec<i64>>,
    /// `Some(None)` selects global entries.
    pub scope: Option<Option<String>>,
    pub session_id: Option<String>,
    pub key: Option<String>,
    /// A JSON object of top-level values the metadata must hold.
    pub metadata: Option<String>,
    /// The entries that cite this source directly.
    pub source: Option<crate::entry::SourceRef>,
    /// Also everything derived from the entries chosen, transitively.
    pub cascade: bool,
}

/// What a forget removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forgotten {
    /// The forget's id, in its receipt and in the log's tombstones.
    pub id: String,
    pub at: Micros,
    /// `(entry id, change number)` of each entry deleted.
    pub deleted: Vec<(i64, i64)>,
    /// Their vectors.
    pub vectors: usize,
    /// Entries kept whose index context held forgotten words, logged to be re-indexed.
    pub reindexed: usize,
}

impl Forget {
    /// The `WHERE` clause and its parameters.
    fn sql(&self) -> Result<(String, Vec<Value>)> {
        let mut clauses = Vec::new();
        let mut params = Vec::new();
        let mut push = |clause: &str, value: Value, params: &mut Vec<Value>| {
            params.push(value);
            clauses.push(clause.replace("?N", &format!("?{}", params.len())));
        };
        if let Some(ids) = &self.ids {
            let list = serde_json::to_string(ids).map_err(|e| Error::Internal(e.to_string()))?;
            push("id IN (SELECT value FROM json_each(?N))", Value::Text(list), &mut params);
        }
        if let Some(scope) = &self.scope {
            push("scope IS ?N", opt_text(scope.as_deref()), &mut params);
        }
        if let Some(session) = &self.session_id {
            push("session_id = ?N", text(session), &mut params);
        }
        if let Some(key) = &self.key {
            push("key = ?N", text(key), &mut params);
        }
        match &self.source {
            Some(crate::entry::SourceRef::Entry(of)) => push(
                "id IN (SELECT entry_id FROM sources WHERE source_id = ?N)",
                Value::Integer(*of),
                &mut params,
            ),
            Some(crate::entry::SourceRef::External(r)) => {
                push("id IN (SELECT entry_id FROM sources WHERE ref = ?N)", text(r), &mut params);
            }
            None => {}
        }
        if let Some(metadata) = &self.metadata {
            let value: serde_json::Value = serde_json::from_str(metadata)
                .map_err(|err| Error::invalid(format!("metadata is not JSON: {err}")))?;
            let serde_json::Value::Object(map) = value else {
                return Err(Error::invalid("metadata must be a JSON object"));
            };
            if map.is_empty() {
                return Err(Error::invalid(
                    "forget: an empty metadata match would match everything (clear_all(confirm=True) does that)",
                ));
            }
            for (name, value) in map {
                if value.is_object() || value.is_array() {
                    return Err(Error::invalid(format!(
                        "forget: metadata {name:?}: only str, number, bool and null values can be matched"
                    )));
                }
                let path = format!("$.\"{}\"", name.replace('\\', "\\\\").replace('"', "\\\""));
                params.push(Value::Text(path));
                let p = params.len();
                // Typed: a bool is not 1, a number not its text; 1 and 1.0 are equal.
                let clause = match value {
                    serde_json::Value::Null => format!("json_type(metadata, ?{p}) = 'null'"),
                    serde_json::Value::Bool(true) => format!("json_type(metadata, ?{p}) = 'true'"),
                    serde_json::Value::Bool(false) => format!("json_type(metadata, ?{p}) = 'false'"),
                    serde_json::Value::Number(n) => {
                        params.push(match n.as_i64() {
                            Some(i) => Value::Integer(i),
                            None => Value::Real(n.as_f64().unwrap_or(f64::NAN)),
                        });
                        format!(
                            "json_type(metadata, ?{p}) IN ('integer', 'real') AND json_extract(metadata, ?{p}) = ?{}",
                            params.len()
                        )
                    }
                    serde_json::Value::String(t) => {
                        params.push(Value::Text(t));
                        format!(
                            "json_type(metadata, ?{p}) = 'text' AND json_extract(metadata, ?{p}) = ?{}",
                            params.len()
                        )
                    }
                    _ => return Err(Error::Internal("a nested metadata value reached the match".into())),
                };
                clauses.push(format!("({clause})"));
            }
        }
        if clauses.is_empty() {
            return Err(Error::invalid(
                "forget needs at least one of ids, scope, session_id, key, source or metadata \
                 (clear_all(confirm=True) forgets everything)",
            ));
        }
        Ok((clauses.join(" AND "), params))
    }
}

impl Store {
    /// Deletes every entry `what` selects, with tombstones in the log and a
    /// receipt in `forgets`, then truncates the WAL.
    pub fn forget(&self, what: &Forget) -> Result<Forgotten> {
        let (clause, params) = what.sql()?;
        let id = format!("{:016x}{:016x}", self.secret_random()?, now_micros());
        let forgotten = self.with_writer(|conn| {
            block_on(async {
                let tx = conn.begin().await?;
                let at = now_micros();
                let sql = if what.cascade {
                    // The chosen entries and everything derived from them.
                    format!(
                        "WITH RECURSIVE chosen(id, depth) AS (SELECT id, 0 FROM entries WHERE {clause} UNION \
                         SELECT s.entry_id, c.depth + 1 FROM sources s JOIN chosen c ON s.source_id = c.id \
                         WHERE c.depth < {}) \
                         SELECT id, scope, session_id, ts FROM entries WHERE id IN (SELECT id FROM chosen) ORDER BY id",
                        super::sources::MAX_DEPTH
                    )
                } else {
                    format!("SELECT id, scope, session_id, ts FROM entries WHERE {clause} ORDER BY id")
                };
                let mut rows = tx.query(&sql, params.clone()).await?;
                let mut chosen: Vec<(i64, Option<String>, Option<String>, i64)> = Vec::new();
                while let Some(row) = rows.next().await? {
                    chosen.push((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?));
                }
                drop(rows);
                let gone: std::collections::HashSet<i64> = chosen.iter().map(|c| c.0).collect();
                let neighbours = next_turns(&tx, &chosen, &gone).await?;
                let vectors = count_vectors(&tx, &chosen).await?;
                let mut deleted = Vec::with_capacity(chosen.len());
                for (entry, ..) in &chosen {
                    if let Some(seq) = super::timeline::remove_as(&tx, *entry, Some(&id)).await? {
                        deleted.push((*entry, seq));
                    }
                }
                for &entry in &neighbours {
                    log_change(&tx, entry, OP_UPDATE).await?;
                }
                let mut scopes: Vec<Option<&str>> = chosen.iter().map(|c| c.1.as_deref()).collect();
                scopes.sort_unstable();
                scopes.dedup();
                let scopes = serde_json::to_string(&scopes).map_err(|e| Error::Internal(e.to_string()))?;
                tx.execute(
                    "INSERT INTO forgets (id, at, entries, vectors, reindexed, scopes) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    vec![
                        text(&id),
                        Value::Integer(at),
                        Value::Integer(deleted.len() as i64),
                        Value::Integer(vectors as i64),
                        Value::Integer(neighbours.len() as i64),
                        Value::Text(scopes),
                    ],
                )
                .await?;
                tx.commit().await?;
                Ok(Forgotten { id: id.clone(), at, deleted, vectors, reindexed: neighbours.len() })
            })
        })?;
        self.truncate_wal()?;
        Ok(forgotten)
    }

    /// Copies the WAL into the database file and truncates it to nothing, so
    /// that no frame written before a forget stays readable. A file store
    /// only; a reader in the middle of a read can hold it back, so this retries
    /// for the busy timeout before it gives up.
    pub fn truncate_wal(&self) -> Result<()> {
        if self.kind != super::Kind::File {
            return Ok(());
        }
        let started = std::time::Instant::now();
        loop {
            let busy = self.with_writer(|conn| {
                block_on(async {
                    let mut rows = conn.query("PRAGMA wal_checkpoint(TRUNCATE)", ()).await?;
                    let row =
                        rows.next().await?.ok_or_else(|| Error::Internal("no checkpoint row".into()))?;
                    Ok(row.get::<i64>(0)? != 0)
                })
            })?;
            if !busy {
                return Ok(());
            }
            if started.elapsed() >= self.busy_timeout {
                return Err(Error::Storage {
                    message:
                        "forget: the write-ahead log could not be truncated while other connections \
                              read it; the entries are deleted: call forget again, or close the other readers"
                            .into(),
                    retryable: true,
                    source: None,
                });
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// 64 random bits from the database's randomness.
    fn secret_random(&self) -> Result<u64> {
        self.with_reader(|conn| {
            block_on(async {
                let mut rows = conn.query("SELECT random()", ()).await?;
                let row = rows.next().await?.ok_or_else(|| Error::Internal("no random row".into()))?;
                Ok(row.get::<i64>(0)? as u64)
            })
        })
    }
}

/// The entries that hold a forgotten entry among their previous turns (the
/// index's context field): the next `CONTEXT_TURNS` of its scope and session,
/// within the context window, that are not forgotten themselves.
async fn next_turns(
    tx: &Tx<'_>,
    chosen: &[(i64, Option<String>, Option<String>, i64)],
    gone: &std::collections::HashSet<i64>,
) -> Result<Vec<i64>> {
    let mut out = Vec::new();
    for (id, scope, session, ts) in chosen {
        let Some(session) = session else { continue };
        let mut rows = tx
            .query_kept(
                &format!(
                    "SELECT id FROM entries WHERE scope IS ?1 AND session_id = ?2 \
                     AND (ts > ?3 OR (ts = ?3 AND id > ?4)) AND ts <= ?3 + {CONTEXT_WINDOW_US} \
                     ORDER BY ts, id LIMIT {}",
                    CONTEXT_TURNS + gone.len().min(64)
                ),
                vec![opt_text(scope.as_deref()), text(session), Value::Integer(*ts), Value::Integer(*id)],
            )
            .await?;
        let mut kept = 0;
        while let Some(row) = rows.next().await? {
            let next: i64 = row.get(0)?;
            if !gone.contains(&next) {
                out.push(next);
            }
            kept += 1;
            if kept >= CONTEXT_TURNS {
                break;
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

async fn count_vectors(tx: &Tx<'_>, chosen: &[(i64, Option<String>, Option<String>, i64)]) -> Result<usize> {
    let ids: Vec<i64> = chosen.iter().map(|c| c.0).collect();
    let list = serde_json::to_string(&ids).map_err(|e| Error::Internal(e.to_string()))?;
    let mut rows = tx
        .query("SELECT COUNT(*) FROM embeddings WHERE entry_id IN (SELECT value FROM json_each(?1))", [list])
        .await?;
    let n: i64 = match rows.next().await? {
        Some(row) => row.get(0)?,
        None => 0,
    };
    Ok(usize::try_from(n).unwrap_or(0))
}
