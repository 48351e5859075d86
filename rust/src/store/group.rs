//! Inserting entries a group at a time: one statement for the group's
//! duplicate lookup, one for its rows and one for its change log, instead of
//! three per entry. A bulk save spent most of its write time setting up and
//! stepping those small statements.
//!
//! Both tables are AUTOINCREMENT, so within one statement (inside the writer's
//! transaction) the rows get consecutive ids in the order they are listed. On
//! a file the ids follow from the last one (`last_insert_rowid`); on a server,
//! whose transaction is a stream of its own, RETURNING names them (see
//! [`inserted_ids`]).
//!
//! The entries' insert is `OR FAIL`, and calls no function (schema 9 took
//! `char(0)` out of the open-key index): SQLite then has nothing of the
//! statement to undo on an error (any error rolls the whole transaction back),
//! so it keeps no statement journal, which had copied every index page a
//! group touched (a random leaf of `entries_dedup` per row) before changing
//! it. The log's insert still keeps one (its nonce is `random()`), for the
//! few pages at the log's end.

use std::borrow::Cow;
use std::collections::HashMap;

use libsql::Value;

use super::change_log::Written;
use super::conn::Tx;
use super::dedupe;
use super::rows::{entry_values, padded_in, ENTRY_COLUMNS_INSERTED, ENTRY_ROW};
use super::schema::OP_INSERT;
use super::PreparedEntry;
use crate::entry::Micros;
use crate::error::{Error, Result};
use crate::normalize::{content_key, normalize};

/// Entries per group. Fifteen parameters a row keeps a statement far below
/// SQLite's limit of 32,766.
pub(super) const GROUP: usize = 64;

/// Where an entry of the group ends up.
enum Slot {
    /// An identical entry already in the store.
    Existing(i64),
    /// The n-th row the group inserts.
    New(usize),
    /// A repeat of the n-th row the group inserts.
    Repeat(usize),
}

/// Inserts `group` (at most `GROUP` entries), appending one `Written` per entry
/// to `out` in order.
pub(super) async fn insert(
    tx: &Tx<'_>,
    group: &[PreparedEntry],
    now: Micros,
    out: &mut Vec<Written>,
) -> Result<()> {
    let stored = duplicates_in_store(tx, group, now).await?;
    let plan = Plan::new(group, stored, now);
    let ids = insert_rows(tx, &plan.rows, now).await?;
    for ((e, _), &id) in plan.rows.iter().zip(&ids) {
        if let Some(vector) = &e.embedding {
            super::vectors::put(tx, id, vector).await?;
        }
    }
    let seqs = log_inserts(tx, &ids, &plan.rows, now).await?;
    plan.finish(&ids, &seqs, out);
    Ok(())
}

/// What a group inserts: the rows it adds, and where each entry ends up.
pub(super) struct Plan<'a> {
    /// The entries inserted, each with its duplicate key, in order.
    pub rows: Vec<(&'a PreparedEntry, i64)>,
    slots: Vec<Slot>,
}

impl<'a> Plan<'a> {
    /// Plans `group`, given for each entry the stored entry it duplicates, at
    /// `now`.
    pub fn new(group: &'a [PreparedEntry], stored: Vec<Option<i64>>, now: Micros) -> Self {
        // Every entry's duplicate key, computed here for one saved without
        // duplicate detection: a later entry of the group may still repeat it.
        let keys: Vec<(i64, Cow<'_, str>)> = group
            .iter()
            .map(|e| match &e.dedup_key {
                Some((key, normalized)) => (*key, Cow::Borrowed(normalized.as_str())),
                None => {
                    let normalized = normalize(&e.content);
                    (content_key(&normalized), Cow::Owned(normalized))
                }
            })
            .collect();
        // An entry that duplicates one earlier in the group takes that one's
        // row, by the rule a save of its own would apply to it stored.
        let mut new_rows: HashMap<(i64, &str), Vec<usize>> = HashMap::new();
        let mut rows: Vec<(&PreparedEntry, i64)> = Vec::with_capacity(group.len());
        let mut slots: Vec<Slot> = Vec::with_capacity(group.len());
        for ((e, stored), (key, normalized)) in group.iter().zip(stored).zip(&keys) {
            if let Some(id) = stored {
                slots.push(Slot::Existing(id));
                continue;
            }
            let same = new_rows.entry((*key, normalized.as_ref())).or_default();
            if e.dedup_key.is_some() {
                if let Some(&row) = same.iter().find(|&&row| dedupe::repeats(rows[row].0, e, now)) {
                    slots.push(Slot::Repeat(row));
                    continue;
                }
            }
            same.push(rows.len());
            slots.push(Slot::New(rows.len()));
            rows.push((e, *key));
        }
        Self { rows, slots }
    }

    /// Appends one `Written` per entry to `out`, given the ids and change
    /// numbers of `rows`, in order.
    pub fn finish(self, ids: &[i64], seqs: &[i64], out: &mut Vec<Written>) {
        for slot in self.slots {
            out.push(match slot {
                Slot::New(row) => Written { id: ids[row], seq: Some(seqs[row]) },
                Slot::Repeat(row) => Written { id: ids[row], seq: None },
                Slot::Existing(id) => Written { id, seq: None },
            });
        }
    }
}

/// The duplicate keys of `group`'s entries that look for duplicates.
pub(super) fn dedup_keys(group: &[PreparedEntry]) -> Vec<i64> {
    group.iter().filter_map(|e| e.dedup_key.as_ref().map(|(k, _)| *k)).collect()
}

/// For each entry of `group`, the id of a stored entry it duplicates among
/// `found` (stored entries by duplicate key, oldest first), or `None`.
pub(super) fn stored_duplicates(
    group: &[PreparedEntry],
    found: &HashMap<i64, Vec<dedupe::Stored>>,
    now: Micros,
) -> Vec<Option<i64>> {
    group
        .iter()
        .map(|e| {
            let (key, normalized) = e.dedup_key.as_ref()?;
            found.get(key)?.iter().find(|s| s.duplicates_now(e, normalized, now)).map(|s| s.id)
        })
        .collect()
}

/// For each entry, the id of a stored entry it duplicates (see `dedupe`; the
/// oldest, as a lookup one entry at a time finds), or `None`.
async fn duplicates_in_store(tx: &Tx<'_>, group: &[PreparedEntry], now: Micros) -> Result<Vec<Option<i64>>> {
    let keys = dedup_keys(group);
    if keys.is_empty() {
        return Ok(vec![None; group.len()]);
    }
    let (list, params) = padded_in(&keys, GROUP);
    let sql = format!(
        "SELECT {}, content_key FROM entries WHERE content_key {list} ORDER BY id",
        dedupe::STORED_COLUMNS
    );
    let mut found: HashMap<i64, Vec<dedupe::Stored>> = HashMap::new();
    let mut rows = tx.query_kept(&sql, params).await?;
    while let Some(row) = rows.next().await? {
        let key: i64 = row.get(dedupe::STORED_WIDTH)?;
        found.entry(key).or_default().push(dedupe::Stored::read(&row)?);
    }
    drop(rows);
    Ok(stored_duplicates(group, &found, now))
}

/// Inserts `rows` (each with its duplicate key) in one statement; their ids,
/// in order.
async fn insert_rows(tx: &Tx<'_>, rows: &[(&PreparedEntry, i64)], now: Micros) -> Result<Vec<i64>> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let params: Vec<Value> = rows.iter().flat_map(|&(e, key)| entry_values(e, key, now)).collect();
    let sql = format!(
        "INSERT OR FAIL INTO entries {ENTRY_COLUMNS_INSERTED} VALUES {}",
        vec![ENTRY_ROW; rows.len()].join(",")
    );
    inserted_ids(tx, &sql, "id", params, rows.len()).await
}

/// Logs an insert of each of `ids` (of the entries `rows`, in order) in one
/// statement, at `now`; the change numbers, in order.
async fn log_inserts(
    tx: &Tx<'_>,
    ids: &[i64],
    rows: &[(&PreparedEntry, i64)],
    now: Micros,
) -> Result<Vec<i64>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let params: Vec<Value> = ids
        .iter()
        .zip(rows)
        .flat_map(|(&id, (e, _))| {
            [Value::Integer(id), Value::Integer(now), super::rows::opt_text(e.scope.as_deref())]
        })
        .collect();
    let sql = format!(
        "INSERT INTO changes (entry_id, op, at, scope) VALUES {}",
        vec![format!("(?, {OP_INSERT}, ?, ?)"); ids.len()].join(",")
    );
    inserted_ids(tx, &sql, "seq", params, ids.len()).await
}

/// The ids `insert` (a statement inserting `n` rows into an AUTOINCREMENT
/// table, without RETURNING) gives its rows, in the order the rows are listed.
/// A statement of a power of two rows is kept prepared (groups come in those
/// sizes); other shapes (a group with repeats) are not.
///
/// On a file they are read from the connection's last rowid: RETURNING would
/// name the same ids, but SQLite gathers its rows in a temporary table before
/// handing them out one at a time. A server's transaction runs on a stream
/// whose last rowid this connection does not see, so there `column` is
/// returned and sorted into order.
async fn inserted_ids(
    tx: &Tx<'_>,
    insert: &str,
    column: &str,
    params: Vec<Value>,
    n: usize,
) -> Result<Vec<i64>> {
    if tx.is_remote() {
        let sql = format!("{insert} RETURNING {column}");
        let mut rows = tx.query_once(&sql, params).await?;
        let mut out = Vec::with_capacity(n);
        while let Some(row) = rows.next().await? {
            out.push(row.get::<i64>(0)?);
        }
        drop(rows);
        if out.len() != n {
            return Err(Error::Internal(format!("{n} rows inserted, {} returned", out.len())));
        }
        out.sort_unstable();
        return Ok(out);
    }
    let changed = if n.is_power_of_two() {
        tx.execute_kept(insert, params).await?
    } else {
        tx.execute(insert, params).await?
    };
    if changed != n as u64 {
        return Err(Error::Internal(format!("{n} rows listed, {changed} inserted")));
    }
    let last = tx.last_insert_rowid();
    Ok((last - n as i64 + 1..=last).collect())
}
