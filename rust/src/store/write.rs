//! Writes. Each runs in one IMMEDIATE transaction (so concurrent processes queue
//! on the busy timeout instead of failing to upgrade a read lock) and logs one
//! change per entry it touches.

use std::sync::LazyLock;

use libsql::{Connection, Value};

use super::change_log::{log_change, log_delete, returned_id, Written};
use super::conn::Tx;
use super::group;
use super::remote_write;
use super::retention::{self, Retention};
use super::rows::{self, entry_values, opt_text, text, ENTRY_COLUMNS, ENTRY_ROW, INSERT_ENTRY};
use super::schema::{OP_INSERT, OP_UPDATE};
use super::timeline;
use super::{now_micros, PreparedEntry, Store};
use crate::entry::{Entry, Micros};
use crate::error::{Error, Result};
use crate::normalize::{content_key, normalize};
use crate::runtime::block_on;

/// `(id, seq)` of each entry a retention rule evicted.
pub type Evicted = Vec<(i64, i64)>;

/// The outcome of `Store::update`.
#[derive(Debug, Clone)]
pub struct Updated {
    pub entry: Entry,
    pub vector: Option<Vec<f32>>,
    pub seq: i64,
    /// `(id, seq)` of entries evicted from the scope the entry moved into.
    pub evicted: Vec<(i64, i64)>,
}

/// New content for an entry, prepared as a save prepares it.
#[derive(Debug, Clone)]
pub struct NewContent {
    pub text: String,
    pub tokens: u32,
    /// The duplicate key.
    pub key: i64,
    /// `safety::injection::stamp` of the text.
    pub risk_stamp: i64,
}

/// Fields to change; `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct EntryPatch {
    pub content: Option<NewContent>,
    pub kind: Option<String>,
    /// `Some(None)` removes the metadata.
    pub metadata: Option<Option<String>>,
    /// `Some(None)` makes the entry global.
    pub scope: Option<Option<String>>,
    /// `Some(None)` drops the entry's vector (its content changed without one).
    pub embedding: Option<Option<Vec<f32>>>,
    /// `Some(None)` makes the entry permanent.
    pub expires_at: Option<Option<Micros>>,
    /// Makes a plain entry a version of this key (`timeline.rs`), placed by its
    /// start as a save would place it.
    pub key: Option<String>,
}

impl Store {
    /// Writes entries; with `retention`, also records returned entries and
    /// evicts each touched scope's surplus. Returns the written entries and the
    /// `(id, seq)` of evicted ones.
    pub fn insert(
        &self,
        entries: &[PreparedEntry],
        retention: Option<&Retention>,
    ) -> Result<(Vec<Written>, Evicted)> {
        let mut written = Vec::with_capacity(entries.len());
        let evicted =
            self.insert_chunks(std::iter::once(Ok(entries)), retention, |_, w| written.extend_from_slice(w))?;
        Ok((written, evicted))
    }

    /// `insert` for a batch that arrives in chunks, all in one transaction: each
    /// chunk is handed to `done` with what was written for it as soon as its rows
    /// are in, so a caller can let go of what it no longer needs before the next
    /// chunk is made. A chunk that comes as an error rolls the whole batch back.
    /// Returns the evicted entries.
    pub fn insert_chunks<C: std::borrow::Borrow<[PreparedEntry]>>(
        &self,
        chunks: impl Iterator<Item = Result<C>>,
        retention: Option<&Retention>,
        mut done: impl FnMut(C, &[Written]),
    ) -> Result<Vec<(i64, i64)>> {
        self.with_writer(|conn| {
            block_on(async {
                let now = now_micros();
                let mut chunks = chunks.peekable();
                // On a server, plain entries are one or two round trips.
                let mut first = None;
                if conn.is_remote() && retention.is_none() {
                    if let Some(chunk) = chunks.next() {
                        let chunk = chunk?;
                        let entries = chunk.borrow();
                        if chunks.peek().is_none() && entries.iter().all(remote_write::single) {
                            let single = match entries {
                                [e] => remote_write::insert_single(conn, e, now).await?.map(|w| vec![w]),
                                _ => None,
                            };
                            let written = match single {
                                Some(written) => written,
                                None => remote_write::insert_many(conn, entries, now).await?,
                            };
                            done(chunk, &written);
                            return Ok(Vec::new());
                        }
                        first = Some(Ok(chunk));
                    }
                }
                let tx = conn.begin().await?;
                let mut scopes: Vec<Option<String>> = Vec::new();
                let mut out = Vec::new();
                for chunk in first.into_iter().chain(chunks) {
                    let chunk = chunk?;
                    out.clear();
                    let entries = chunk.borrow();
                    // Grouped inserts read their ids back in ascending order, which
                    // ids given by the caller need not follow: those go one by one.
                    // So do entries that take a place in a timeline.
                    let one_by_one =
                        if entries.iter().any(|e| e.id.is_some() || e.alone()) { entries.len() } else { 0 };
                    let (singles, rest) = entries.split_at(one_by_one);
                    for e in singles {
                        out.push(insert_one(&tx, e, now).await?);
                    }
                    let mut groups = rest.chunks_exact(group::GROUP);
                    for g in &mut groups {
                        group::insert(&tx, g, now, &mut out).await?;
                    }
                    // The rest goes in groups of a power of two (statements of a
                    // few shapes, each kept prepared), the last of an odd count alone.
                    let mut left = groups.remainder();
                    while left.len() >= 2 {
                        let n = 1 << left.len().ilog2();
                        group::insert(&tx, &left[..n], now, &mut out).await?;
                        left = &left[n..];
                    }
                    for e in left {
                        out.push(insert_one(&tx, e, now).await?);
                    }
                    if retention.is_some() {
                        scopes.extend(chunk.borrow().iter().map(|e| e.scope.clone()));
                        scopes.sort();
                        scopes.dedup();
                    }
                    done(chunk, &out);
                }
                let evicted = match retention {
                    Some(retention) => retention::enforce(&tx, retention, &scopes, None).await?,
                    None => Vec::new(),
                };
                tx.commit().await?;
                Ok(evicted)
            })
        })
    }

    /// Applies `patch` to entry `id`; returns the new entry, its vector, the
    /// change number and the `(id, seq)` of entries evicted to keep the scope it
    /// moved into within `retention`'s cap (never the entry itself).
    pub fn update(&self, id: i64, patch: EntryPatch, retention: Option<&Retention>) -> Result<Updated> {
        self.with_writer(|conn| {
            block_on(async {
                let tx = conn.begin().await?;
                let sql = format!("SELECT {ENTRY_COLUMNS} FROM entries WHERE id = ?1");
                let mut found = tx.query(&sql, [id]).await?;
                let row = found.next().await?.ok_or(Error::NotFound(id))?;
                let mut entry = rows::entry(&row, 0)?;
                drop(found);
                let mut key = None;
                if let Some(content) = patch.content {
                    entry.content = content.text;
                    entry.tokens = content.tokens;
                    entry.risk_stamp = Some(content.risk_stamp);
                    key = Some(content.key);
                }
                if let Some(kind) = patch.kind {
                    entry.kind = kind;
                }
                if let Some(metadata) = patch.metadata {
                    entry.metadata = metadata;
                }
                let moved = patch.scope.as_ref().is_some_and(|scope| *scope != entry.scope);
                if moved && (entry.validity.key.is_some() || timeline::linked(&tx, id).await?) {
                    return Err(Error::invalid(format!(
                        "entry {id} is a version in a timeline (a key's, or a correction's): \
                         it cannot move to another scope"
                    )));
                }
                if let Some(scope) = patch.scope {
                    entry.scope = scope;
                }
                if let Some(expires_at) = patch.expires_at {
                    entry.expires_at = expires_at;
                }
                if let Some(new_key) = patch.key.filter(|k| entry.validity.key.as_ref() != Some(k)) {
                    if entry.validity.key.is_some() || timeline::linked(&tx, id).await? {
                        return Err(Error::invalid(format!(
                            "entry {id} is already a version in a timeline: save a new version instead"
                        )));
                    }
                    entry.validity = timeline::join(&tx, &entry, new_key).await?;
                }
                entry.updated_at = Some(now_micros());
                tx.execute(
                    "UPDATE entries SET content = ?2, kind = ?3, scope = ?4, metadata = ?5, tokens = ?6, \
                 content_key = COALESCE(?7, content_key), risks = ?8, expires_at = ?9, updated_at = ?10 \
                 WHERE id = ?1",
                    vec![
                        Value::Integer(id),
                        text(&entry.content),
                        text(&entry.kind),
                        opt_text(entry.scope.as_deref()),
                        opt_text(entry.metadata.as_deref()),
                        Value::Integer(i64::from(entry.tokens)),
                        key.map_or(Value::Null, Value::Integer),
                        entry.risk_stamp.map_or(Value::Null, Value::Integer),
                        entry.expires_at.map_or(Value::Null, Value::Integer),
                        entry.updated_at.map_or(Value::Null, Value::Integer),
                    ],
                )
                .await?;
                match &patch.embedding {
                    Some(Some(vector)) => super::vectors::put(&tx, id, vector).await?,
                    Some(None) => super::vectors::remove(&tx, id).await?,
                    None => {}
                }
                let vector = match patch.embedding {
                    Some(vector) => vector,
                    None => stored_vector(&tx, id).await?,
                };
                let seq = log_change(&tx, id, OP_UPDATE).await?;
                // Also records the returned-at times the retention carries.
                let evicted = match retention {
                    Some(retention) => {
                        let scopes = if moved { std::slice::from_ref(&entry.scope) } else { &[] };
                        retention::enforce(&tx, retention, scopes, Some(id)).await?
                    }
                    None => Vec::new(),
                };
                tx.commit().await?;
                Ok(Updated { entry, vector, seq, evicted })
            })
        })
    }

    pub fn set_meta(&self, key: &str, value: &str) -> Result<()> {
        self.with_writer(|conn| {
            block_on(async {
                conn.execute(
                    "INSERT INTO meta (key, value) VALUES (?1, ?2) \
                     ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    [key, value],
                )
                .await?;
                Ok(())
            })
        })
    }

    /// A random 64-bit secret kept in `meta` under `name`, made on first use from
    /// SQLite's `randomblob` (the OS's randomness) and the same ever after.
    pub fn secret(&self, name: &str) -> Result<u64> {
        let hex = self.random_meta(name, 8)?;
        u64::from_str_radix(&hex, 16)
            .map_err(|_| Error::Internal(format!("meta {name:?} is not a 64-bit hex secret")))
    }

    /// `bytes` random bytes kept in `meta` under `name` as lowercase hex: made
    /// on first use from SQLite's `randomblob`, the same ever after.
    pub(super) fn random_meta(&self, name: &str, bytes: u32) -> Result<String> {
        if let Some(hex) = self.meta(name)? {
            return Ok(hex);
        }
        self.with_writer(|conn| {
            block_on(async {
                conn.execute(
                    "INSERT INTO meta (key, value) VALUES (?1, lower(hex(randomblob(?2)))) \
                     ON CONFLICT (key) DO NOTHING",
                    libsql::params![name, bytes],
                )
                .await?;
                Ok(())
            })
        })?;
        self.meta(name)?.ok_or_else(|| Error::Internal(format!("meta {name:?} was not kept")))
    }

    /// Deletes the entries that exist; returns `(id, seq)` for each one deleted.
    pub fn delete(&self, ids: &[i64]) -> Result<Vec<(i64, i64)>> {
        self.with_writer(|conn| {
            block_on(async {
                let tx = conn.begin().await?;
                let mut out = Vec::new();
                for &id in ids {
                    if let Some(seq) = timeline::remove(&tx, id).await? {
                        out.push((id, seq));
                    }
                }
                tx.commit().await?;
                Ok(out)
            })
        })
    }

    /// Deletes every entry `filter` selects, in one transaction.
    pub fn delete_selected(&self, filter: &super::ListFilter) -> Result<Vec<(i64, i64)>> {
        let (clause, params) = filter.sql();
        self.delete_where(&format!("SELECT id FROM entries WHERE {clause}"), params, true)
    }

    /// Deletes every entry that expired at or before `now`.
    pub fn purge_expired(&self, now: Micros) -> Result<Vec<(i64, i64)>> {
        self.delete_where("SELECT id FROM entries WHERE expires_at <= ?1", vec![Value::Integer(now)], true)
    }

    /// Deletes every entry of `scope`, or every entry at all for `None`.
    pub fn clear(&self, scope: Option<&str>) -> Result<Vec<(i64, i64)>> {
        let (select, params) = match scope {
            Some(scope) => ("SELECT id FROM entries WHERE scope = ?1", vec![text(scope)]),
            None => ("SELECT id FROM entries", vec![]),
        };
        // A timeline never leaves its scope: clearing one takes all of it.
        self.delete_where(select, params, false)
    }

    /// Deletes the entries `select` names (a query returning ids), logging each.
    /// With `relink`, each deleted version gives its interval back
    /// (`timeline::remove`); without, the caller deletes whole timelines.
    fn delete_where(&self, select: &str, params: Vec<Value>, relink: bool) -> Result<Vec<(i64, i64)>> {
        self.with_writer(|conn| {
            block_on(async {
                let tx = conn.begin().await?;
                let mut found = tx.query(select, params).await?;
                let mut ids: Vec<i64> = Vec::new();
                while let Some(row) = found.next().await? {
                    ids.push(row.get(0)?);
                }
                drop(found);
                let mut out = Vec::with_capacity(ids.len());
                for id in ids {
                    if relink {
                        if let Some(seq) = timeline::remove(&tx, id).await? {
                            out.push((id, seq));
                        }
                    } else {
                        let mut found =
                            tx.query_kept("SELECT scope FROM entries WHERE id = ?1", [id]).await?;
                        let scope: Option<String> = match found.next().await? {
                            Some(row) => row.get(0)?,
                            None => continue,
                        };
                        drop(found);
                        tx.execute_kept("DELETE FROM entries WHERE id = ?1", [id]).await?;
                        out.push((id, log_delete(&tx, id, scope.as_deref(), None).await?));
                    }
                }
                tx.commit().await?;
                Ok(out)
            })
        })
    }
}

/// Inserts one entry, or finds the identical one already in its scope. An
/// entry with a key or one it supersedes takes its place in a timeline
/// (`timeline.rs`).
async fn insert_one(tx: &Tx<'_>, e: &PreparedEntry, now: Micros) -> Result<Written> {
    if !e.in_timeline() {
        if let Some((key, normalized)) = &e.dedup_key {
            if let Some(id) = find_duplicate(tx, e, *key, normalized, now).await? {
                return Ok(Written { id, seq: None });
            }
        }
    }
    if let Some(id) = e.id {
        let mut taken = tx.query("SELECT 1 FROM entries WHERE id = ?1", [id]).await?;
        if taken.next().await?.is_some() {
            return Err(Error::invalid(format!("id {id} is already taken by another entry")));
        }
    }
    let place = if e.in_timeline() {
        if e.valid_to.is_some_and(|to| to <= e.starts()) {
            return Err(Error::invalid("valid_to must be later than valid_from"));
        }
        let place = timeline::place(tx, e).await?;
        // The same content again under its key: the version it would supersede
        // stands, if it still holds where this one would start.
        if let (Some((_, normalized)), Some(before)) = (&e.dedup_key, &place.before) {
            let holds = before.valid_to.is_none_or(|to| to > e.starts());
            if e.supersedes.is_none()
                && e.valid_to.is_none()
                && holds
                && before.stored.duplicates(e, normalized, now)
            {
                return Ok(Written { id: before.id, seq: None });
            }
        }
        place.close_before(tx, e).await?;
        Some(place)
    } else {
        None
    };
    // RETURNING rather than last_insert_rowid: the same on a file and over
    // Hrana, where the rowid travels with each statement's result.
    static INSERT_ONE: LazyLock<String> =
        LazyLock::new(|| format!("{INSERT_ENTRY} {ENTRY_ROW} RETURNING id"));
    let key = e.dedup_key.as_ref().map_or_else(|| content_key(&normalize(&e.content)), |(key, _)| *key);
    let mut values = entry_values(e, key, now);
    if let Some(place) = &place {
        values[14] = place.ends(e).map_or(Value::Null, Value::Integer);
    }
    let id = returned_id(tx, &INSERT_ONE, values.to_vec()).await?;
    if let Some(place) = &place {
        place.link(tx, id).await?;
    }
    super::sources::link(tx, id, e).await?;
    if let Some(vector) = &e.embedding {
        super::vectors::put(tx, id, vector).await?;
    }
    let seq = log_change(tx, id, OP_INSERT).await?;
    Ok(Written { id, seq: Some(seq) })
}

async fn stored_vector(conn: &Connection, id: i64) -> Result<Option<Vec<f32>>> {
    let mut rows = conn.query("SELECT vector FROM embeddings WHERE entry_id = ?1", [id]).await?;
    match rows.next().await? {
        Some(row) => super::vectors::column(&row, 0),
        None => Ok(None),
    }
}

/// The id of a stored entry that `e` duplicates (see `dedupe`), the oldest first.
async fn find_duplicate(
    conn: &Tx<'_>,
    e: &PreparedEntry,
    key: i64,
    normalized: &str,
    now: Micros,
) -> Result<Option<i64>> {
    static FIND: LazyLock<String> = LazyLock::new(|| {
        format!(
            "SELECT {} FROM entries WHERE content_key = ?1 AND scope IS ?2 ORDER BY id",
            super::dedupe::STORED_COLUMNS
        )
    });
    let mut found = conn.query_kept(&FIND, vec![Value::Integer(key), opt_text(e.scope.as_deref())]).await?;
    while let Some(row) = found.next().await? {
        let stored = super::dedupe::Stored::read(&row)?;
        if stored.duplicates_now(e, normalized, now) {
            return Ok(Some(stored.id));
        }
    }
    Ok(None)
}
