//! Keys and validity time: each key of a scope has a timeline of versions.
//!
//! An entry in a timeline (one with a key, an interval, a predecessor or a
//! successor) holds over `[valid_from, valid_to)`; `valid_from` defaults to its
//! timestamp and `valid_to` is open until something supersedes it. A plain
//! entry stores no `valid_from` and holds at every time, so that reads of a
//! store without keys are what they were before keys existed. The versions
//! of a key are kept as one timeline without overlaps, by this rule:
//!
//! - Versions are ordered by `valid_from`, then by id (a later save at the same
//!   instant comes after).
//! - A new version N lands after P, the last version starting at or before it,
//!   and before S, the first starting after it.
//! - P stops holding where N starts (its `valid_to` becomes N's `valid_from`,
//!   unless it already ended earlier) and points to N (`superseded_by`).
//! - N holds until S starts (or its own `valid_to`, if earlier) and points to S.
//!   So a version that arrives late (its `valid_from` earlier than the current
//!   version's) goes into the history and never replaces the newer one.
//! - Saving the same content as P (the version it would supersede), with the
//!   same fields, returns P and adds no version.
//! - Deleting a version gives its interval back: its predecessor holds again
//!   until the deleted one would have ended, and points where it pointed.
//!
//! `supersedes` links an entry to one without a key that it corrects, by the
//! same rule with that entry as P. Every entry whose interval changes is
//! logged as updated *before* the change that caused it, so that a writer's
//! own changes never look contiguous to the index when they are not
//! (`index::follow`).

use libsql::Value;

use super::change_log::log_change;
use super::conn::Tx;
use super::rows::{opt_text, text};
use super::schema::OP_UPDATE;
use super::PreparedEntry;
use crate::entry::Micros;
use crate::error::{Error, Result};

/// A version next to where a new one lands.
#[derive(Debug, Clone)]
pub(super) struct Neighbour {
    pub id: i64,
    pub valid_to: Option<Micros>,
    /// The columns `dedupe::STORED_COLUMNS` names, for the same-content check.
    pub stored: super::dedupe::Stored,
}

/// Where a new version lands: after `before`, ahead of `after`.
#[derive(Debug, Default)]
pub(super) struct Place {
    pub before: Option<Neighbour>,
    /// `(id, valid_from)` of the next version.
    pub after: Option<(i64, Micros)>,
}

/// Finds where `e` lands among its key's versions (or, for `supersedes`,
/// after the entry it corrects). Checks that what it supersedes may be.
pub(super) async fn place(tx: &Tx<'_>, e: &PreparedEntry) -> Result<Place> {
    let starts = e.starts();
    let mut place = Place::default();
    if let Some(old) = e.supersedes {
        let neighbour = read(tx, "id = ?1", vec![Value::Integer(old)]).await?;
        let Some((neighbour, scope, key, from, next)) = neighbour else {
            return Err(Error::invalid(format!("supersedes: no entry {old} in this scope")));
        };
        if scope != e.scope {
            return Err(Error::invalid(format!("supersedes: no entry {old} in this scope")));
        }
        if key.is_some() && key != e.key {
            return Err(Error::invalid(format!(
                "supersedes: entry {old} is a version of key {:?}; save under that key",
                key.unwrap_or_default()
            )));
        }
        if key.is_none() {
            if e.key.is_some() {
                return Err(Error::invalid(format!(
                    "supersedes: entry {old} has no key; a correction of it cannot have one"
                )));
            }
            if let Some(next) = next {
                return Err(Error::invalid(format!(
                    "supersedes: entry {old} is already superseded by {next}"
                )));
            }
            if from > starts {
                return Err(Error::invalid(format!(
                    "supersedes: entry {old} starts to hold after this one (valid_from)"
                )));
            }
            place.before = Some(neighbour);
            return Ok(place);
        }
    }
    let Some(key) = &e.key else { return Ok(place) };
    let scope = opt_text(e.scope.as_deref());
    place.before = read(
        tx,
        "scope IS ?1 AND key = ?2 AND COALESCE(valid_from, ts) <= ?3 \
         ORDER BY COALESCE(valid_from, ts) DESC, id DESC LIMIT 1",
        vec![scope.clone(), text(key), Value::Integer(starts)],
    )
    .await?
    .map(|(n, ..)| n);
    let mut rows = tx
        .query(
            "SELECT id, COALESCE(valid_from, ts) FROM entries \
             WHERE scope IS ?1 AND key = ?2 AND COALESCE(valid_from, ts) > ?3 \
             ORDER BY COALESCE(valid_from, ts), id LIMIT 1",
            vec![scope, text(key), Value::Integer(starts)],
        )
        .await?;
    if let Some(row) = rows.next().await? {
        place.after = Some((row.get(0)?, row.get(1)?));
    }
    Ok(place)
}

/// The version `where_` selects, with its scope, key, start and successor.
async fn read(
    tx: &Tx<'_>,
    where_: &str,
    params: Vec<Value>,
) -> Result<Option<(Neighbour, Option<String>, Option<String>, Micros, Option<i64>)>> {
    let sql = format!(
        "SELECT {}, valid_to, COALESCE(valid_from, ts), superseded_by FROM entries WHERE {where_}",
        super::dedupe::STORED_COLUMNS
    );
    let mut rows = tx.query(&sql, params).await?;
    let Some(row) = rows.next().await? else { return Ok(None) };
    let stored = super::dedupe::Stored::read(&row)?;
    let w = super::dedupe::STORED_WIDTH;
    let (scope, key) = (stored.scope().clone(), stored.key().clone());
    let neighbour = Neighbour { id: stored.id, valid_to: row.get(w)?, stored };
    Ok(Some((neighbour, scope, key, row.get(w + 1)?, row.get(w + 2)?)))
}

impl Place {
    /// When the new version stops holding: its own end, or where the next one
    /// starts, whichever is first.
    pub fn ends(&self, e: &PreparedEntry) -> Option<Micros> {
        match (e.valid_to, self.after) {
            (Some(to), Some((_, next))) => Some(to.min(next)),
            (to, None) => to,
            (None, Some((_, next))) => Some(next),
        }
    }

    /// Closes the version before, where `e` starts, and logs it: called before
    /// `e` is inserted (the unique open version of a key is then free).
    pub async fn close_before(&self, tx: &Tx<'_>, e: &PreparedEntry) -> Result<()> {
        let Some(before) = &self.before else { return Ok(()) };
        let starts = e.starts();
        let ends = before.valid_to.map_or(starts, |to| to.min(starts));
        // A plain entry that is corrected joins a timeline: its start becomes explicit.
        tx.execute(
            "UPDATE entries SET valid_to = ?2, valid_from = COALESCE(valid_from, ts) WHERE id = ?1",
            [before.id, ends],
        )
        .await?;
        log_change(tx, before.id, OP_UPDATE).await?;
        Ok(())
    }

    /// Links the versions around the inserted entry `id`.
    pub async fn link(&self, tx: &Tx<'_>, id: i64) -> Result<()> {
        if let Some(before) = &self.before {
            tx.execute("UPDATE entries SET superseded_by = ?2 WHERE id = ?1", [before.id, id]).await?;
        }
        if let Some((next, _)) = self.after {
            tx.execute("UPDATE entries SET superseded_by = ?2 WHERE id = ?1", [id, next]).await?;
        }
        Ok(())
    }
}

/// Deletes entry `id`, first giving its interval back to the version it
/// superseded (logged before the delete); returns the delete's change number,
/// or `None` if there was no such entry.
pub(super) async fn remove(tx: &Tx<'_>, id: i64) -> Result<Option<i64>> {
    remove_as(tx, id, None).await
}

/// `remove`, logging the deletion as part of the forget `forget` when given.
pub(super) async fn remove_as(tx: &Tx<'_>, id: i64, forget: Option<&str>) -> Result<Option<i64>> {
    let mut rows = tx
        .query_kept(
            "SELECT p.id, p.valid_to = COALESCE(e.valid_from, e.ts), e.valid_to, e.superseded_by \
             FROM entries e JOIN entries p ON p.superseded_by = e.id WHERE e.id = ?1",
            [id],
        )
        .await?;
    let before = match rows.next().await? {
        Some(row) => Some((
            row.get::<i64>(0)?,
            row.get::<bool>(1)?,
            row.get::<Option<i64>>(2)?,
            row.get::<Option<i64>>(3)?,
        )),
        None => None,
    };
    drop(rows);
    let mut rows = tx.query_kept("SELECT scope FROM entries WHERE id = ?1", [id]).await?;
    let Some(row) = rows.next().await? else { return Ok(None) };
    let scope: Option<String> = row.get(0)?;
    drop(rows);
    // Deleted first: the version reopened may take its place as the key's open one.
    if tx.execute_kept("DELETE FROM entries WHERE id = ?1", [id]).await? == 0 {
        return Ok(None);
    }
    if let Some((before, closed_by_it, valid_to, next)) = before {
        let next = next.map_or(Value::Null, Value::Integer);
        if closed_by_it {
            let to = valid_to.map_or(Value::Null, Value::Integer);
            tx.execute(
                "UPDATE entries SET valid_to = ?2, superseded_by = ?3 WHERE id = ?1",
                vec![Value::Integer(before), to, next],
            )
            .await?;
        } else {
            tx.execute(
                "UPDATE entries SET superseded_by = ?2 WHERE id = ?1",
                vec![Value::Integer(before), next],
            )
            .await?;
        }
        log_change(tx, before, OP_UPDATE).await?;
    }
    Ok(Some(super::change_log::log_delete(tx, id, scope.as_deref(), forget).await?))
}

/// Whether entry `id` supersedes or was superseded by another.
pub(super) async fn linked(tx: &Tx<'_>, id: i64) -> Result<bool> {
    let mut rows = tx
        .query(
            "SELECT 1 FROM entries WHERE (id = ?1 AND superseded_by IS NOT NULL) OR superseded_by = ?1 LIMIT 1",
            [id],
        )
        .await?;
    Ok(rows.next().await?.is_some())
}

/// Makes the stored plain entry `entry` a version of `key`, placed by its
/// start as a save would place it (the version before it is closed and logged
/// first); returns its new validity.
pub(super) async fn join(
    tx: &Tx<'_>,
    entry: &crate::entry::Entry,
    key: String,
) -> Result<crate::entry::Validity> {
    let version = PreparedEntry {
        content: entry.content.clone(),
        kind: entry.kind.clone(),
        scope: entry.scope.clone(),
        session_id: entry.session_id.clone(),
        metadata: entry.metadata.clone(),
        timestamp: entry.timestamp,
        tokens: entry.tokens,
        expires_at: entry.expires_at,
        dedup_key: None,
        embedding: None,
        id: Some(entry.id),
        risk_stamp: 0,
        key: Some(key),
        valid_from: entry.validity.valid_from,
        valid_to: entry.validity.valid_to,
        supersedes: None,
        sources: Vec::new(),
        cross_scope_sources: false,
    };
    let place = place(tx, &version).await?;
    place.close_before(tx, &version).await?;
    let validity = crate::entry::Validity {
        valid_from: Some(version.starts()),
        valid_to: place.ends(&version),
        superseded_by: place.after.map(|(next, _)| next),
        key: version.key,
    };
    tx.execute(
        "UPDATE entries SET key = ?2, valid_from = ?3, valid_to = ?4 WHERE id = ?1",
        vec![
            Value::Integer(entry.id),
            opt_text(validity.key.as_deref()),
            validity.valid_from.map_or(Value::Null, Value::Integer),
            validity.valid_to.map_or(Value::Null, Value::Integer),
        ],
    )
    .await?;
    place.link(tx, entry.id).await?;
    Ok(validity)
}
