//! Saves to a libSQL server in one or two round trips.
//!
//! Over the network every statement of a transaction is a round trip, and a
//! save is several statements. Plain entries (no id, key, correction or
//! sources) are therefore saved in batches (`hrana`), each statement with its
//! arguments:
//! - one entry: one batch holds the whole transaction: the duplicate lookup,
//!   the insert, its vector, its change and the commit. The insert is skipped
//!   when any entry with the same duplicate key is already in the scope; the
//!   lookup's rows then say whether one of them is a duplicate by the full rule
//!   (`dedupe`). If none is, nothing was written, and it is saved as a group;
//! - a group: one batch begins the transaction and reads every stored entry
//!   with one of the group's duplicate keys; the second inserts what is new
//!   (`group::Plan`), with its vectors and changes, and commits. A failed
//!   second batch rolls the transaction back in its last step (`hrana`).

use std::collections::HashMap;
use std::fmt::Write;

use libsql::Value;

use super::change_log::Written;
use super::conn::Conn;
use super::dedupe::{Stored, STORED_COLUMNS, STORED_WIDTH};
use super::group::{dedup_keys, stored_duplicates, Plan};
use super::hrana::{Batch, Outcome};
use super::rows::{entry_values, opt_text, Cells, ENTRY_ROW, INSERT_ENTRY};
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
    let scope = opt_text(e.scope.as_deref());
    let mut batch = Batch::new();
    batch.push("BEGIN IMMEDIATE", []);
    let lookup = e.dedup_key.is_some().then(|| {
        batch.push(
            format!(
                "SELECT {STORED_COLUMNS} FROM entries WHERE content_key = ?1 AND scope IS ?2 ORDER BY id"
            ),
            [Value::Integer(key), scope.clone()],
        )
    });
    let columns = INSERT_ENTRY.strip_suffix(" VALUES").unwrap_or(INSERT_ENTRY);
    let values = ENTRY_ROW.trim_start_matches('(').trim_end_matches(')');
    let mut args = entry_values(e, key, now).to_vec();
    let insert = if e.dedup_key.is_some() {
        args.extend([Value::Integer(key), scope.clone()]);
        batch.push(
            format!(
                "{columns} SELECT {values} WHERE NOT EXISTS \
                 (SELECT 1 FROM entries WHERE content_key = ?16 AND scope IS ?17) RETURNING id"
            ),
            args,
        )
    } else {
        batch.push(format!("{columns} SELECT {values} RETURNING id"), args)
    };
    // Each later statement runs only if the one before it wrote its row; the
    // new entry has the highest id (AUTOINCREMENT).
    if let Some(vector) = &e.embedding {
        batch.push(
            "INSERT INTO embeddings (entry_id, vector) SELECT (SELECT MAX(id) FROM entries), ?1 \
             WHERE changes() = 1",
            [Value::Blob(super::vectors::encode(vector))],
        );
    }
    let change = batch.push(
        format!(
            "INSERT INTO changes (entry_id, op, at, scope) SELECT (SELECT MAX(id) FROM entries), {OP_INSERT}, \
             ?1, ?2 WHERE changes() = 1 RETURNING seq"
        ),
        [Value::Integer(now_micros()), scope],
    );
    batch.push("COMMIT", []);

    // Nothing is written unless the whole batch ran, so a batch that found
    // the database locked is sent again.
    let mut outcome = conn.run_while_locked(&batch).await?;
    let stored = match lookup {
        Some(step) => outcome.rows(step)?.iter().map(Stored::read).collect::<Result<Vec<_>>>()?,
        None => Vec::new(),
    };
    let id = outcome.first_integer(insert)?;
    let seq = outcome.first_integer(change)?;
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
    let client = conn.hrana()?;
    let mut open = None;
    let found = if keys.is_empty() {
        HashMap::new()
    } else {
        let mut lookup = Batch::new();
        lookup.push("BEGIN IMMEDIATE", []);
        for part in keys.chunks(PER_STATEMENT) {
            let mut sql = format!("SELECT {STORED_COLUMNS}, content_key FROM entries WHERE content_key IN (");
            for (i, key) in part.iter().enumerate() {
                let _ = write!(sql, "{}{key}", if i == 0 { "" } else { "," });
            }
            sql.push_str(") ORDER BY id");
            lookup.push(sql, []);
        }
        // A BEGIN that found the database locked began nothing: sent again.
        let (mut outcome, stream) =
            conn.while_locked(|| std::future::ready(client.begin(lookup.clone()))).await?;
        open = Some(stream);
        match stored_by_key(&mut outcome, lookup.steps()) {
            Ok(found) => found,
            Err(err) => {
                if let Some(stream) = open {
                    client.abandon(stream);
                }
                return Err(err);
            }
        }
    };
    let plan = Plan::new(entries, stored_duplicates(entries, &found, now), now);
    let at = now_micros();
    let mut batch = Batch::new();
    if open.is_none() {
        batch.push("BEGIN IMMEDIATE", []);
    }
    let mut steps = Vec::new();
    for part in plan.rows.chunks(PER_STATEMENT) {
        let mut sql = String::from(INSERT_ENTRY);
        let mut args = Vec::with_capacity(part.len() * 15);
        for (i, (e, key)) in part.iter().enumerate() {
            sql.push_str(if i == 0 { " " } else { ", " });
            sql.push_str(ENTRY_ROW);
            args.extend(entry_values(e, *key, now));
        }
        sql.push_str(" RETURNING id");
        let ids = batch.push(sql, args);
        // The statement's rows took the highest ids, in the order listed.
        let n = part.len();
        let (mut vectors, mut blobs) = (Vec::new(), Vec::new());
        for (i, (e, _)) in part.iter().enumerate() {
            if let Some(vector) = &e.embedding {
                vectors.push(format!("((SELECT MAX(id) FROM entries) - {}, ?)", n - 1 - i));
                blobs.push(Value::Blob(super::vectors::encode(vector)));
            }
        }
        if !vectors.is_empty() {
            batch.push(
                format!("INSERT INTO embeddings (entry_id, vector) VALUES {}", vectors.join(", ")),
                blobs,
            );
        }
        let seqs = batch.push(
            format!(
                "INSERT INTO changes (entry_id, op, at, scope) SELECT id, {OP_INSERT}, {at}, scope FROM entries \
                 WHERE id > (SELECT MAX(id) FROM entries) - {n} ORDER BY id RETURNING seq"
            ),
            [],
        );
        steps.push((ids, seqs, n));
    }
    batch.push("COMMIT", []);
    // Without a lookup, the BEGIN is in this batch, and a locked one wrote
    // nothing. With one, a failed batch skips its COMMIT, and its last step
    // rolls the transaction back (`hrana::Batch::push_rollback`).
    let mut outcome = match open {
        Some(stream) => client.finish(stream, batch)?,
        None => conn.run_while_locked(&batch).await?,
    };
    let (mut ids, mut seqs) = (Vec::with_capacity(plan.rows.len()), Vec::with_capacity(plan.rows.len()));
    for (id_step, seq_step, n) in steps {
        ids.extend(integers(&mut outcome, id_step, n)?);
        seqs.extend(integers(&mut outcome, seq_step, n)?);
    }
    let mut out = Vec::with_capacity(entries.len());
    plan.finish(&ids, &seqs, &mut out);
    Ok(out)
}

/// The stored entries by duplicate key, oldest first, from the lookup batch's
/// steps after its BEGIN (`steps` in all).
fn stored_by_key(outcome: &mut Outcome, steps: usize) -> Result<HashMap<i64, Vec<Stored>>> {
    let mut found: HashMap<i64, Vec<Stored>> = HashMap::new();
    for step in 1..steps {
        for row in outcome.rows(step)? {
            let key: i64 = row.get(STORED_WIDTH)?;
            found.entry(key).or_default().push(Stored::read(&row)?);
        }
    }
    Ok(found)
}

/// The integers an `INSERT ... RETURNING` of `n` rows returned at `step`,
/// ascending (AUTOINCREMENT hands them out in the order the rows were listed).
fn integers(outcome: &mut Outcome, step: usize, n: usize) -> Result<Vec<i64>> {
    let mut out = outcome.rows(step)?.iter().map(|row| row.get::<i64>(0)).collect::<Result<Vec<_>>>()?;
    if out.len() != n {
        return Err(Error::Internal(format!("{n} rows inserted, {} returned", out.len())));
    }
    out.sort_unstable();
    Ok(out)
}
