//! Saves to a libSQL server in one or two round trips.
//!
//! Over the network every statement of a transaction is a round trip, and a
//! save is several statements. Plain entries (no id, key, correction or
//! sources) are therefore saved in batches of SQL text (`literal.rs`):
//! - one entry: one batch holds the whole transaction: the duplicate lookup,
//!   the insert, its vector, its change and the commit. The insert is skipped
//!   when any entry with the same duplicate key is already in the scope; the
//!   lookup's rows then say whether one of them is a duplicate by the full rule
//!   (`dedupe`). If none is, nothing was written, and it is saved as a group;
//! - a group: one batch begins the transaction and reads every stored entry
//!   with one of the group's duplicate keys; the second inserts what is new
//!   (`group::Plan`), with its vectors and changes, and commits. A failed
//!   second batch ends its stream, and the server rolls the transaction back.

use std::collections::HashMap;
use std::fmt::Write;

use libsql::{BatchRows, Rows};

use super::change_log::Written;
use super::conn::Conn;
use super::dedupe::{Stored, STORED_COLUMNS, STORED_WIDTH};
use super::group::{dedup_keys, stored_duplicates, Plan};
use super::literal::{inline, push_literal, push_literals};
use super::rows::{entry_values, opt_text, INSERT_ENTRY};
use super::schema::OP_INSERT;
use super::{now_micros, PreparedEntry};
use crate::entry::Micros;
use crate::error::{Error, Result};
use crate::normalize::{content_key, normalize};

/// Whether `e` can be saved by `insert_single`.
pub(super) fn single(e: &PreparedEntry) -> bool {
    e.id.is_none() && !e.alone()
}

/// Saves `e` (see `single`) in one round trip on the server connection
/// `conn`; `None` when an entry with its duplicate key is in its scope but
/// none duplicates it, and nothing was written.
pub(super) async fn insert_single(conn: &Conn, e: &PreparedEntry, now: Micros) -> Result<Option<Written>> {
    let key = e.dedup_key.as_ref().map_or_else(|| content_key(&normalize(&e.content)), |(key, _)| *key);
    let same_key =
        inline("content_key = ?1 AND scope IS ?2", vec![key.into(), opt_text(e.scope.as_deref())])?;
    let mut sql = String::from("BEGIN IMMEDIATE;\n");
    if e.dedup_key.is_some() {
        let _ = writeln!(sql, "SELECT {STORED_COLUMNS} FROM entries WHERE {same_key} ORDER BY id;");
    }
    let columns = INSERT_ENTRY.strip_suffix(" VALUES").unwrap_or(INSERT_ENTRY);
    sql.push_str(columns);
    sql.push_str(" SELECT ");
    push_literals(&mut sql, &entry_values(e, key, now));
    if e.dedup_key.is_some() {
        let _ = write!(sql, " WHERE NOT EXISTS (SELECT 1 FROM entries WHERE {same_key})");
    }
    sql.push_str(" RETURNING id;\n");
    // Each later statement runs only if the one before it wrote its row; the
    // new entry has the highest id (AUTOINCREMENT).
    if let Some(vector) = &e.embedding {
        sql.push_str("INSERT INTO embeddings (entry_id, vector) SELECT (SELECT MAX(id) FROM entries), ");
        push_literal(&mut sql, &libsql::Value::Blob(super::vectors::encode(vector)));
        sql.push_str(" WHERE changes() = 1;\n");
    }
    let _ = write!(
        sql,
        "INSERT INTO changes (entry_id, op, at, scope) SELECT (SELECT MAX(id) FROM entries), {OP_INSERT}, {}, ",
        now_micros()
    );
    push_literal(&mut sql, &opt_text(e.scope.as_deref()));
    sql.push_str(" WHERE changes() = 1 RETURNING seq;\nCOMMIT;");

    // Nothing is written unless the whole batch ran, so a batch that found
    // the database locked is sent again.
    let mut batch = conn.batch_while_locked(&sql).await?;
    let _begin = step(&mut batch)?;
    let mut stored = Vec::new();
    if e.dedup_key.is_some() {
        let mut rows = step(&mut batch)?;
        while let Some(row) = rows.next().await? {
            stored.push(Stored::read(&row)?);
        }
    }
    let id = first_integer(step(&mut batch)?).await?;
    if e.embedding.is_some() {
        step(&mut batch)?;
    }
    let seq = first_integer(step(&mut batch)?).await?;
    match (id, seq) {
        (Some(id), Some(seq)) => Ok(Some(Written { id, seq: Some(seq) })),
        (Some(_), None) => {
            Err(Error::Internal("a remote save inserted an entry but logged no change".into()))
        }
        (None, _) => {
            let (_, normalized) = e.dedup_key.as_ref().ok_or_else(|| {
                Error::Internal("a remote save without duplicate detection inserted nothing".into())
            })?;
            Ok(stored
                .iter()
                .find(|s| s.duplicates_now(e, normalized, now))
                .map(|s| Written { id: s.id, seq: None }))
        }
    }
}

/// Rows an INSERT statement of `insert_many` writes, and keys a lookup reads.
const PER_STATEMENT: usize = 500;

/// Saves `entries` (each `single`) in one transaction of two round trips (one
/// when none looks for duplicates) on the server connection `conn`; one
/// `Written` per entry, in order.
pub(super) async fn insert_many(conn: &Conn, entries: &[PreparedEntry], now: Micros) -> Result<Vec<Written>> {
    let mut keys = dedup_keys(entries);
    keys.sort_unstable();
    keys.dedup();
    let mut sql = String::from("BEGIN IMMEDIATE;\n");
    let found = if keys.is_empty() {
        HashMap::new()
    } else {
        for part in keys.chunks(PER_STATEMENT) {
            let list: Vec<String> = part.iter().map(i64::to_string).collect();
            let _ = writeln!(
                sql,
                "SELECT {STORED_COLUMNS}, content_key FROM entries WHERE content_key IN ({}) ORDER BY id;",
                list.join(",")
            );
        }
        let found = match lookup(conn, &std::mem::take(&mut sql), keys.len().div_ceil(PER_STATEMENT)).await {
            Ok(found) => found,
            Err(err) => {
                // The transaction may have begun: end it now rather than when
                // the server times the stream out (it holds the write lock).
                let _ = conn.execute_batch("ROLLBACK;").await;
                return Err(err);
            }
        };
        found
    };
    let plan = Plan::new(entries, stored_duplicates(entries, &found, now));
    let at = now_micros();
    for part in plan.rows.chunks(PER_STATEMENT) {
        sql.push_str(INSERT_ENTRY);
        for (i, (e, key)) in part.iter().enumerate() {
            sql.push_str(if i == 0 { " (" } else { ", (" });
            push_literals(&mut sql, &entry_values(e, *key, now));
            sql.push(')');
        }
        sql.push_str(" RETURNING id;\n");
        // The statement's rows took the highest ids, in the order listed.
        let n = part.len();
        let vectors: Vec<String> = part
            .iter()
            .enumerate()
            .filter_map(|(i, (e, _))| {
                let vector = e.embedding.as_ref()?;
                let mut row = format!("((SELECT MAX(id) FROM entries) - {}, ", n - 1 - i);
                push_literal(&mut row, &libsql::Value::Blob(super::vectors::encode(vector)));
                row.push(')');
                Some(row)
            })
            .collect();
        if !vectors.is_empty() {
            let _ = writeln!(sql, "INSERT INTO embeddings (entry_id, vector) VALUES {};", vectors.join(", "));
        }
        let _ = writeln!(
            sql,
            "INSERT INTO changes (entry_id, op, at, scope) SELECT id, {OP_INSERT}, {at}, scope FROM entries \
             WHERE id > (SELECT MAX(id) FROM entries) - {n} ORDER BY id RETURNING seq;"
        );
    }
    sql.push_str("COMMIT;");
    // Without a lookup, the BEGIN is in this batch, and a locked one wrote nothing.
    let mut batch =
        if keys.is_empty() { conn.batch_while_locked(&sql).await? } else { conn.execute_batch(&sql).await? };
    if keys.is_empty() {
        step(&mut batch)?;
    }
    let (mut ids, mut seqs) = (Vec::with_capacity(plan.rows.len()), Vec::with_capacity(plan.rows.len()));
    for part in plan.rows.chunks(PER_STATEMENT) {
        ids.extend(integers(step(&mut batch)?, part.len()).await?);
        if part.iter().any(|(e, _)| e.embedding.is_some()) {
            step(&mut batch)?;
        }
        seqs.extend(integers(step(&mut batch)?, part.len()).await?);
    }
    let mut out = Vec::with_capacity(entries.len());
    plan.finish(&ids, &seqs, &mut out);
    Ok(out)
}

/// Runs the lookup batch `sql` (a BEGIN, then `statements` lookups), leaving
/// its transaction open: the stored entries by duplicate key, oldest first.
async fn lookup(conn: &Conn, sql: &str, statements: usize) -> Result<HashMap<i64, Vec<Stored>>> {
    // A BEGIN that found the database locked began nothing: sent again.
    let mut batch = conn.batch_while_locked(sql).await?;
    step(&mut batch)?;
    let mut found: HashMap<i64, Vec<Stored>> = HashMap::new();
    for _ in 0..statements {
        let mut rows = step(&mut batch)?;
        while let Some(row) = rows.next().await? {
            let key: i64 = row.get(STORED_WIDTH)?;
            found.entry(key).or_default().push(Stored::read(&row)?);
        }
    }
    Ok(found)
}

/// The integers an `INSERT ... RETURNING` of `n` rows returned, ascending
/// (AUTOINCREMENT hands them out in the order the rows were listed).
async fn integers(mut rows: Rows, n: usize) -> Result<Vec<i64>> {
    let mut out = Vec::with_capacity(n);
    while let Some(row) = rows.next().await? {
        out.push(row.get::<i64>(0)?);
    }
    if out.len() != n {
        return Err(Error::Internal(format!("{n} rows inserted, {} returned", out.len())));
    }
    out.sort_unstable();
    Ok(out)
}

/// The next statement's rows in `batch`.
fn step(batch: &mut BatchRows) -> Result<Rows> {
    batch
        .next_stmt_row()
        .flatten()
        .ok_or_else(|| Error::Internal("a remote batch returned too few results".into()))
}

/// The first column of the first row, if there is a row.
async fn first_integer(mut rows: Rows) -> Result<Option<i64>> {
    match rows.next().await? {
        Some(row) => Ok(Some(row.get(0)?)),
        None => Ok(None),
    }
}
