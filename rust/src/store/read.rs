//! Reads: lookups, the change log, counts and newest-first listing.

use std::collections::HashMap;
use std::sync::Arc;

use libsql::Value;

use super::hrana::{self, Batch};
use super::rows::{self, opt_text, text, Cells, ENTRY_COLUMNS};
use super::{Change, ChangeOp, Store};
use crate::entry::{Entry, Micros};
use crate::error::{Error, Result};
use crate::runtime::block_on;

/// The list lengths `fetch` pads to, so that it keeps a few statements.
const FETCH_WIDTHS: [usize; 6] = [8, 16, 32, 64, 128, 256];

/// Filters for `list` and `count`; every `None` matches everything.
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    /// These scopes (`None` in the list: global entries); `None`: any.
    pub scopes: Option<Vec<Option<String>>>,
    /// Only this scope and the scopes beneath it (`scope_path`).
    pub scope_prefix: Option<String>,
    /// Only entries whose metadata matches.
    pub metadata: Option<crate::filter::Filter>,
    pub kind: Option<String>,
    pub session_id: Option<String>,
    pub since: Option<Micros>,
    pub until: Option<Micros>,
    /// Only entries alive at this time (not expired).
    pub alive_at: Option<Micros>,
    /// Only entries whose validity interval holds this time; `None`: every version.
    pub valid_at: Option<Micros>,
    /// For the engine's reads: every version, whatever `valid_at` says; without
    /// it they default `valid_at` to now. The store filters on `valid_at` alone.
    pub all_versions: bool,
}

impl ListFilter {
    pub(super) fn sql(&self) -> (String, Vec<Value>) {
        let mut clauses = Vec::new();
        let mut params = Vec::new();
        if let Some(scopes) = &self.scopes {
            let any: Vec<String> = scopes
                .iter()
                .map(|scope| {
                    params.push(opt_text(scope.as_deref()));
                    format!("scope IS ?{}", params.len())
                })
                .collect();
            clauses.push(if any.is_empty() { "0".to_owned() } else { format!("({})", any.join(" OR ")) });
        }
        if let Some(prefix) = &self.scope_prefix {
            clauses.push(crate::scope_path::sql(prefix, &mut params));
        }
        if let Some(filter) = &self.metadata {
            if !filter.is_empty() {
                clauses.push(filter.sql(&mut params));
            }
        }
        if let Some(kind) = &self.kind {
            params.push(text(kind));
            clauses.push(format!("kind = ?{}", params.len()));
        }
        if let Some(session) = &self.session_id {
            params.push(text(session));
            clauses.push(format!("session_id = ?{}", params.len()));
        }
        if let Some(since) = self.since {
            params.push(Value::Integer(since));
            clauses.push(format!("ts >= ?{}", params.len()));
        }
        if let Some(until) = self.until {
            params.push(Value::Integer(until));
            clauses.push(format!("ts < ?{}", params.len()));
        }
        if let Some(now) = self.alive_at {
            params.push(Value::Integer(now));
            clauses.push(format!("(expires_at IS NULL OR expires_at > ?{})", params.len()));
        }
        if let Some(at) = self.valid_at {
            params.push(Value::Integer(at));
            let n = params.len();
            clauses.push(format!(
                "(valid_from IS NULL OR valid_from <= ?{n}) AND (valid_to IS NULL OR valid_to > ?{n})"
            ));
        }
        let sql = if clauses.is_empty() { "1".to_owned() } else { clauses.join(" AND ") };
        (sql, params)
    }
}

/// Every row of `rows`, read as `ENTRY_COLUMNS`, onto `out`.
async fn read_entries(rows: &mut libsql::Rows, out: &mut Vec<Entry>) -> Result<()> {
    while let Some(row) = rows.next().await? {
        out.push(rows::entry(&row, 0)?);
    }
    Ok(())
}

impl Store {
    /// Entries by id, in the order asked; `None` where an id does not exist.
    pub fn fetch(&self, ids: &[i64]) -> Result<Vec<Option<Entry>>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        if self.reads_remote() {
            return Ok(self.fetch_remote(ids, false)?.0);
        }
        let statements = fetch_statements(ids);
        let entries = self.with_lookup(|conn| {
            block_on(async {
                let mut entries = Vec::with_capacity(ids.len());
                if let [(sql, params)] = statements.as_slice() {
                    read_entries(&mut *conn.query_kept(sql, params.clone()).await?, &mut entries).await?;
                    return Ok(entries);
                }
                // Several statements read one snapshot: an entry deleted or
                // changed meanwhile is seen as it was before, or not at all.
                let tx = conn.begin_read().await?;
                for (sql, params) in &statements {
                    read_entries(&mut *tx.query_kept(sql, params.clone()).await?, &mut entries).await?;
                }
                tx.commit().await?;
                Ok(entries)
            })
        })?;
        Ok(in_order(ids, entries))
    }

    /// On a server, `fetch` and `head` in one round trip: the head is read
    /// first, so an entry is never older than the change number returned.
    /// Elsewhere, `None` (a local head costs nothing).
    pub fn fetch_with_head(&self, ids: &[i64]) -> Result<Option<(Vec<Option<Entry>>, i64)>> {
        if !self.reads_remote() {
            return Ok(None);
        }
        let (entries, head) = self.fetch_remote(ids, true)?;
        Ok(Some((entries, head.unwrap_or(0))))
    }

    /// `fetch` on a server, in one round trip through our client (`hrana`),
    /// with the log's head first when `head`.
    fn fetch_remote(&self, ids: &[i64], head: bool) -> Result<(Vec<Option<Entry>>, Option<i64>)> {
        let statements = fetch_statements(ids);
        let mut batch = Batch::new();
        // Several statements read one snapshot, as `fetch` does locally.
        let snapshot = statements.len() > 1;
        if snapshot {
            batch.push("BEGIN", []);
        }
        let at_head = head.then(|| batch.push(HEAD, []));
        let first = batch.steps();
        for (select, params) in &statements {
            batch.push(select.as_str(), params.iter().cloned());
        }
        if snapshot {
            batch.push("COMMIT", []);
        }
        let (head, entries) = self.with_reader(|conn| {
            block_on(async {
                let mut outcome = conn.hrana()?.run(batch.clone())?;
                let head = match at_head {
                    Some(step) => Some(outcome.first_integer(step)?.unwrap_or(0)),
                    None => None,
                };
                let mut entries = Vec::with_capacity(ids.len());
                for step in first..first + statements.len() {
                    for row in outcome.rows(step)? {
                        entries.push(rows::entry(&row, 0)?);
                    }
                }
                Ok((head, entries))
            })
        })?;
        Ok((in_order(ids, entries), head))
    }
}

/// The statements `fetch` runs for `ids`: a few shapes, each kept prepared (a
/// list is padded to the next width by repeating its last id).
fn fetch_statements(ids: &[i64]) -> Vec<(String, Vec<Value>)> {
    ids.chunks(FETCH_WIDTHS[FETCH_WIDTHS.len() - 1])
        .map(|batch| {
            let width = FETCH_WIDTHS.iter().copied().find(|&w| w >= batch.len()).unwrap_or(batch.len());
            let (list, params) = rows::padded_in(batch, width);
            (format!("SELECT {ENTRY_COLUMNS} FROM entries WHERE id {list}"), params)
        })
        .collect()
}

/// `entries` (found by id, in any order) in the order of `ids`, `None` where
/// one was not found.
fn in_order(ids: &[i64], entries: Vec<Entry>) -> Vec<Option<Entry>> {
    {
        let mut found: HashMap<i64, Entry> = entries.into_iter().map(|e| (e.id, e)).collect();
        // An id may be asked for more than once: each but its last ask gets a copy.
        let mut asks: HashMap<i64, usize> = HashMap::with_capacity(ids.len());
        for id in ids {
            *asks.entry(*id).or_default() += 1;
        }
        ids.iter()
            .map(|id| {
                let left = asks.get_mut(id).map(|n| {
                    *n -= 1;
                    *n
                });
                if left == Some(0) {
                    found.remove(id)
                } else {
                    found.get(id).cloned()
                }
            })
            .collect()
    }
}

/// The newest change number, or 0 for an empty log.
const HEAD: &str = "SELECT COALESCE(MAX(seq), 0) FROM changes";

/// The log's head, asked of a server and not yet read: the request is on the
/// wire while the query goes on. Dropped unread, it still reads the answer, so
/// that the stream it went on is kept or closed (`hrana::Client::outcome`).
pub struct PendingHead(Arc<hrana::Client>, Option<hrana::Started>);

impl PendingHead {
    /// Reads the answer (waiting for it).
    pub fn wait(mut self) -> Result<i64> {
        let started = self.1.take().ok_or_else(|| Error::Internal("a head read twice".into()))?;
        Ok(self.0.outcome(started)?.first_integer(0)?.unwrap_or(0))
    }
}

impl Drop for PendingHead {
    fn drop(&mut self) {
        if let Some(started) = self.1.take() {
            let _ = self.0.outcome(started);
        }
    }
}

impl Store {
    /// The newest change number, or 0 for an empty log.
    pub fn head(&self) -> Result<i64> {
        self.scalar(HEAD, vec![])
    }

    /// `head`, asked of a server without a replica and read later
    /// (`PendingHead::wait`); `None` elsewhere, or when the request could not
    /// be sent.
    pub fn start_head(&self) -> Option<PendingHead> {
        let client = Arc::clone(self.hrana.as_ref().filter(|_| self.reads_remote())?);
        let mut batch = Batch::new();
        batch.push(HEAD, []);
        let started = client.start(batch).ok()?;
        Some(PendingHead(client, Some(started)))
    }

    pub fn count(&self, filter: &ListFilter) -> Result<i64> {
        // "Alive" as a filter would scan every row; counting all and taking
        // away the expired ones uses the expiry index instead. One statement, so
        // both counts read one snapshot.
        if let Some(now) = filter.alive_at {
            let (clause, mut params) = ListFilter { alive_at: None, ..filter.clone() }.sql();
            params.push(Value::Integer(now));
            return self.scalar(
                &format!(
                    "SELECT (SELECT COUNT(*) FROM entries WHERE {clause}) - \
                     (SELECT COUNT(*) FROM entries WHERE {clause} AND expires_at IS NOT NULL \
                     AND expires_at <= ?{})",
                    params.len()
                ),
                params,
            );
        }
        let (clause, params) = filter.sql();
        self.scalar(&format!("SELECT COUNT(*) FROM entries WHERE {clause}"), params)
    }

    /// The ids of the entries `filter` selects (a metadata filter's selection,
    /// for a query).
    pub fn ids_where(&self, filter: &ListFilter) -> Result<std::collections::HashSet<i64>> {
        let (clause, params) = filter.sql();
        let sql = format!("SELECT id FROM entries WHERE {clause}");
        self.with_reader(|conn| {
            block_on(async {
                let mut rows = conn.query(&sql, params.clone()).await?;
                let mut out = std::collections::HashSet::new();
                while let Some(row) = rows.next().await? {
                    out.insert(row.get::<i64>(0)?);
                }
                Ok(out)
            })
        })
    }

    /// Every scope with its number of entries alive at `now`; `None` is the
    /// global scope. A scope whose entries have all expired is left out.
    /// With `prefix`, only that scope and those beneath it (`scope_path`).
    pub fn scopes(&self, now: Micros, prefix: Option<&str>) -> Result<Vec<(Option<String>, i64)>> {
        let mut params = vec![Value::Integer(now)];
        let under = match prefix {
            Some(prefix) => format!(" AND {}", crate::scope_path::sql(prefix, &mut params)),
            None => String::new(),
        };
        let sql = format!(
            "SELECT scope, COUNT(*) FROM entries WHERE (expires_at IS NULL OR expires_at > ?1){under} \
             GROUP BY scope ORDER BY scope"
        );
        self.with_reader(|conn| {
            block_on(async {
                let mut rows = conn.query(&sql, params.clone()).await?;
                let mut out = Vec::new();
                while let Some(row) = rows.next().await? {
                    out.push((row.get(0)?, row.get(1)?));
                }
                Ok(out)
            })
        })
    }

    /// One page of entries matching `filter`, newest first, strictly after the
    /// `(timestamp, id)` cursor when one is given.
    pub fn list(
        &self,
        filter: &ListFilter,
        after: Option<(Micros, i64)>,
        limit: usize,
    ) -> Result<Vec<Entry>> {
        let (mut clause, mut params) = filter.sql();
        if let Some((ts, id)) = after {
            params.push(Value::Integer(ts));
            params.push(Value::Integer(id));
            let (a, b) = (params.len() - 1, params.len());
            clause = format!("{clause} AND (ts < ?{a} OR (ts = ?{a} AND id < ?{b}))");
        }
        let sql = format!(
            "SELECT {ENTRY_COLUMNS} FROM entries WHERE {clause} ORDER BY ts DESC, id DESC LIMIT {limit}"
        );
        self.with_reader(|conn| {
            block_on(async {
                let mut rows = conn.query(&sql, params.clone()).await?;
                let mut out = Vec::new();
                while let Some(row) = rows.next().await? {
                    out.push(rows::entry(&row, 0)?);
                }
                Ok(out)
            })
        })
    }

    /// Up to `limit` changes after `after`, oldest first, each with the entry's
    /// current state.
    pub fn changes_since(&self, after: i64, limit: usize) -> Result<Vec<Change>> {
        let sql = format!(
            "SELECT c.seq, c.entry_id, c.op, {}, v.vector \
             FROM changes c LEFT JOIN entries e ON e.id = c.entry_id \
             LEFT JOIN embeddings v ON v.entry_id = c.entry_id \
             WHERE c.seq > ?1 ORDER BY c.seq LIMIT {limit}",
            rows::prefixed("e")
        );
        self.with_reader(|conn| {
            block_on(async {
                let mut rows = conn.query_kept(&sql, [after]).await?;
                let mut out = Vec::new();
                while let Some(row) = rows.next().await? {
                    let op = ChangeOp::from_code(row.get::<i64>(2)?)?;
                    let present = row.get::<Option<i64>>(3)?.is_some();
                    let live = op != ChangeOp::Delete && present;
                    let entry = if live { Some(rows::entry(&row, 3)?) } else { None };
                    let vector =
                        if live { super::vectors::column(&row, 3 + rows::ENTRY_WIDTH)? } else { None };
                    out.push(Change { seq: row.get(0)?, entry_id: row.get(1)?, op, entry, vector });
                }
                Ok(out)
            })
        })
    }

    pub fn meta(&self, key: &str) -> Result<Option<String>> {
        self.with_reader(|conn| {
            block_on(async {
                let mut rows = conn.query_kept("SELECT value FROM meta WHERE key = ?1", [key]).await?;
                match rows.next().await? {
                    Some(row) => Ok(Some(row.get(0)?)),
                    None => Ok(None),
                }
            })
        })
    }

    pub(super) fn scalar(&self, sql: &str, params: Vec<Value>) -> Result<i64> {
        self.with_reader(|conn| {
            block_on(async {
                if conn.is_remote() {
                    let mut batch = Batch::new();
                    batch.push(sql, params.iter().cloned());
                    let rows = conn.hrana()?.run(batch)?.rows(0)?;
                    return match rows.first() {
                        Some(row) => Ok(row.get::<Option<i64>>(0)?.unwrap_or(0)),
                        None => Ok(0),
                    };
                }
                let mut rows = conn.query_kept(sql, params.clone()).await?;
                match rows.next().await? {
                    Some(row) => Ok(row.get::<Option<i64>>(0)?.unwrap_or(0)),
                    None => Ok(0),
                }
            })
        })
    }
}

impl Store {
    /// The versions of `key` in `scope`, in timeline order (`timeline.rs`).
    pub fn history(&self, key: &str, scope: Option<&str>) -> Result<Vec<Entry>> {
        let sql = format!(
            "SELECT {ENTRY_COLUMNS} FROM entries WHERE key = ?1 AND scope IS ?2 \
             ORDER BY COALESCE(valid_from, ts), id"
        );
        self.with_reader(|conn| {
            block_on(async {
                let mut rows = conn.query_kept(&sql, vec![text(key), opt_text(scope)]).await?;
                let mut out = Vec::new();
                read_entries(&mut rows, &mut out).await?;
                Ok(out)
            })
        })
    }

    /// The keys `scope` holds, in order, at most `limit` of them.
    pub fn keys(&self, scope: Option<&str>, limit: usize) -> Result<Vec<String>> {
        let sql = format!(
            "SELECT DISTINCT key FROM entries WHERE key IS NOT NULL AND scope IS ?1 ORDER BY key LIMIT {limit}"
        );
        self.with_reader(|conn| {
            block_on(async {
                let mut rows = conn.query_kept(&sql, vec![opt_text(scope)]).await?;
                let mut out = Vec::new();
                while let Some(row) = rows.next().await? {
                    out.push(row.get(0)?);
                }
                Ok(out)
            })
        })
    }

    /// The entries linked to `id` by supersession, both ways, oldest first;
    /// empty when there is no such entry.
    pub fn versions(&self, id: i64) -> Result<Vec<Entry>> {
        let sql = format!(
            "WITH RECURSIVE \
               back(id, depth) AS (SELECT ?1, 0 UNION \
                 SELECT e.id, back.depth + 1 FROM entries e JOIN back ON e.superseded_by = back.id \
                 WHERE back.depth < {MAX_CHAIN}), \
               fwd(id, depth) AS (SELECT ?1, 0 UNION \
                 SELECT e.superseded_by, fwd.depth + 1 FROM entries e JOIN fwd ON e.id = fwd.id \
                 WHERE e.superseded_by IS NOT NULL AND fwd.depth < {MAX_CHAIN}) \
             SELECT {ENTRY_COLUMNS} FROM entries WHERE id IN (SELECT id FROM back UNION SELECT id FROM fwd) \
             ORDER BY COALESCE(valid_from, ts), id"
        );
        self.with_reader(|conn| {
            block_on(async {
                let mut rows = conn.query_kept(&sql, [id]).await?;
                let mut out = Vec::new();
                read_entries(&mut rows, &mut out).await?;
                Ok(out)
            })
        })
    }
}

/// The most links `versions` follows each way.
const MAX_CHAIN: usize = 100_000;
