//! Embeddings: one float32 vector per entry, beside the entries table.
//!
//! A vector is written in the same transaction as its entry, and changing one
//! logs an update of the entry, so every search index follows vectors through
//! the same change log as content.

use libsql::{Connection, Value};

use super::change_log::log_change;
use super::rows::{self, ENTRY_COLUMNS};
use super::schema::OP_UPDATE;
use super::{Change, ChangeOp, Store};
use crate::entry::Entry;
use crate::error::{Error, Result};
use crate::runtime::block_on;

/// Little-endian float32, the layout of libSQL's `F32_BLOB`.
pub fn encode(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn decode(blob: &[u8]) -> Result<Vec<f32>> {
    if !blob.len().is_multiple_of(4) {
        return Err(Error::Internal(format!("an embedding of {} bytes is not float32", blob.len())));
    }
    Ok(blob.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
}

/// Reads an optional vector column.
pub fn column(row: &libsql::Row, at: i32) -> Result<Option<Vec<f32>>> {
    match row.get_value(at)? {
        Value::Blob(blob) => Ok(Some(decode(&blob)?)),
        _ => Ok(None),
    }
}

/// Stores (or replaces) the vector of entry `id`.
pub(super) async fn put(conn: &Connection, id: i64, vector: &[f32]) -> Result<()> {
    conn.execute(
        "INSERT INTO embeddings (entry_id, vector) VALUES (?1, ?2) \
         ON CONFLICT (entry_id) DO UPDATE SET vector = excluded.vector",
        vec![Value::Integer(id), Value::Blob(encode(vector))],
    )
    .await?;
    Ok(())
}

pub(super) async fn remove(conn: &Connection, id: i64) -> Result<()> {
    conn.execute("DELETE FROM embeddings WHERE entry_id = ?1", [id]).await?;
    Ok(())
}

impl Store {
    /// Every entry that has a vector, with it: what an index loads on open.
    pub fn vectors(&self) -> Result<Vec<(Entry, Vec<f32>)>> {
        let sql = format!(
            "SELECT {}, v.vector FROM embeddings v JOIN entries e ON e.id = v.entry_id",
            rows::prefixed("e")
        );
        self.with_reader(|conn| {
            block_on(async {
                let mut rows = conn.query(&sql, ()).await?;
                let mut out = Vec::new();
                while let Some(row) = rows.next().await? {
                    let vector = column(&row, rows::ENTRY_WIDTH)?.unwrap_or_default();
                    out.push((rows::entry(&row, 0)?, vector));
                }
                Ok(out)
            })
        })
    }

    /// How many entries have a vector.
    pub fn vector_count(&self) -> Result<i64> {
        self.scalar("SELECT COUNT(*) FROM embeddings", vec![])
    }

    /// Up to `limit` entries without a vector, by id after `after`: `(id, content)`.
    pub fn missing_vectors(&self, after: i64, limit: usize) -> Result<Vec<(i64, String)>> {
        let sql = format!(
            "SELECT e.id, e.content FROM entries e LEFT JOIN embeddings v ON v.entry_id = e.id \
             WHERE v.entry_id IS NULL AND e.id > ?1 ORDER BY e.id LIMIT {limit}"
        );
        self.with_reader(|conn| {
            block_on(async {
                let mut rows = conn.query(&sql, [after]).await?;
                let mut out = Vec::new();
                while let Some(row) = rows.next().await? {
                    out.push((row.get(0)?, row.get(1)?));
                }
                Ok(out)
            })
        })
    }

    /// Sets the vectors of existing entries in one transaction, logging an
    /// update of each; ids that no longer exist are skipped.
    pub fn set_vectors(&self, vectors: &[(i64, Vec<f32>)]) -> Result<Vec<Change>> {
        let sql = format!("SELECT {ENTRY_COLUMNS} FROM entries WHERE id = ?1");
        self.with_writer(|conn| {
            block_on(async {
                let tx = conn.begin().await?;
                let mut out = Vec::with_capacity(vectors.len());
                for (id, vector) in vectors {
                    let mut found = tx.query(&sql, [*id]).await?;
                    let Some(row) = found.next().await? else { continue };
                    let entry = rows::entry(&row, 0)?;
                    drop(found);
                    put(&tx, *id, vector).await?;
                    let seq = log_change(&tx, *id, OP_UPDATE).await?;
                    out.push(Change {
                        seq,
                        entry_id: *id,
                        op: ChangeOp::Update,
                        entry: Some(entry),
                        vector: Some(vector.clone()),
                    });
                }
                tx.commit().await?;
                Ok(out)
            })
        })
    }

    /// Drops every vector (before re-embedding with another model) and records
    /// `meta` in the same transaction, logging an update of each entry touched.
    pub fn clear_vectors(&self, meta: &[(&str, &str)]) -> Result<Vec<Change>> {
        let sql =
            format!("SELECT {} FROM embeddings v JOIN entries e ON e.id = v.entry_id", rows::prefixed("e"));
        self.with_writer(|conn| {
            block_on(async {
                let tx = conn.begin().await?;
                let mut rows = tx.query(&sql, ()).await?;
                let mut entries = Vec::new();
                while let Some(row) = rows.next().await? {
                    entries.push(rows::entry(&row, 0)?);
                }
                drop(rows);
                tx.execute("DELETE FROM embeddings", ()).await?;
                let mut out = Vec::with_capacity(entries.len());
                for entry in entries {
                    let seq = log_change(&tx, entry.id, OP_UPDATE).await?;
                    out.push(Change {
                        seq,
                        entry_id: entry.id,
                        op: ChangeOp::Update,
                        entry: Some(entry),
                        vector: None,
                    });
                }
                for (key, value) in meta {
                    tx.execute(
                        "INSERT INTO meta (key, value) VALUES (?1, ?2) \
                         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                        [*key, *value],
                    )
                    .await?;
                }
                tx.commit().await?;
                Ok(out)
            })
        })
    }
}
