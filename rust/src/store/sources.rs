//! Provenance: what each entry rests on, in the `sources` table, indexed both
//! ways (an entry's sources, and what was derived from an entry or a
//! reference).
//!
//! A source is an entry of this store or an external reference, optionally
//! with a character span. An entry source must exist, in the entry's own scope
//! unless the save allowed another (`cross_scope_sources`), and linking it must
//! not close a cycle (only an entry restored at an id that other entries
//! already cite could). Deleting a source keeps the links of the entries
//! derived from it: they say where they came from, and `forget(cascade=True)`
//! can still follow them.

use libsql::Value;

use super::conn::Tx;
use super::rows::text;
use super::{PreparedEntry, Store};
use crate::entry::SourceRef;
use crate::error::{Error, Result};
use crate::runtime::block_on;

/// The most links `Store::linked` follows from an entry.
pub const MAX_DEPTH: usize = 32;

/// One link found by following sources up or down from an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Linked {
    /// The entry that cites the source.
    pub entry_id: i64,
    pub source: SourceRef,
    pub span: Option<(i64, i64)>,
    /// How many links from the entry asked about (1: a direct one).
    pub depth: usize,
}

/// Records the sources of the new entry `id` (`e`'s), checking each.
pub(super) async fn link(tx: &Tx<'_>, id: i64, e: &PreparedEntry) -> Result<()> {
    for source in &e.sources {
        let (source_id, reference) = match &source.of {
            SourceRef::Entry(of) => {
                let mut rows = tx.query_kept("SELECT scope FROM entries WHERE id = ?1", [*of]).await?;
                let scope: Option<Option<String>> = match rows.next().await? {
                    Some(row) => Some(row.get(0)?),
                    None => None,
                };
                drop(rows);
                // Another scope's entry is "not found", as a missing one: whether
                // it exists is that scope's to know.
                if !scope.is_some_and(|scope| scope == e.scope || e.cross_scope_sources) {
                    return Err(Error::invalid(format!("sources: no entry {of} in this scope")));
                }
                if *of == id || rests_on(tx, *of, id).await? {
                    return Err(Error::invalid(format!(
                        "sources: entry {of} rests on entry {id}: linking them would make a cycle"
                    )));
                }
                (Value::Integer(*of), Value::Null)
            }
            SourceRef::External(r) => (Value::Null, text(r)),
        };
        let (start, end) =
            source.span.map_or((Value::Null, Value::Null), |(s, e)| (Value::Integer(s), Value::Integer(e)));
        tx.execute_kept(
            "INSERT INTO sources (entry_id, source_id, ref, span_start, span_end) VALUES (?1, ?2, ?3, ?4, ?5)",
            vec![Value::Integer(id), source_id, reference, start, end],
        )
        .await?;
    }
    Ok(())
}

/// Whether entry `entry` rests on `on`, through any chain of sources.
async fn rests_on(tx: &Tx<'_>, entry: i64, on: i64) -> Result<bool> {
    let mut rows = tx
        .query(
            &format!(
                "WITH RECURSIVE up(id, depth) AS (SELECT ?1, 0 UNION \
                 SELECT s.source_id, up.depth + 1 FROM sources s JOIN up ON s.entry_id = up.id \
                 WHERE s.source_id IS NOT NULL AND up.depth < {MAX_DEPTH}) \
                 SELECT 1 FROM up WHERE id = ?2 LIMIT 1"
            ),
            [entry, on],
        )
        .await?;
    Ok(rows.next().await?.is_some())
}

impl Store {
    /// The sources of `id` (`up`), or what was derived from it (`!up`), to
    /// `depth` links, nearest first.
    pub fn linked(&self, id: i64, up: bool, depth: usize) -> Result<Vec<Linked>> {
        let depth = depth.clamp(1, MAX_DEPTH);
        // Up: from the entry to what it cites; down: from what cites it.
        let (start, step) = if up {
            ("entry_id", "s.entry_id = w.source_id")
        } else {
            ("source_id", "s.source_id = w.entry_id")
        };
        let sql = format!(
            "WITH RECURSIVE walk(entry_id, source_id, ref, span_start, span_end, depth) AS ( \
               SELECT entry_id, source_id, ref, span_start, span_end, 1 FROM sources WHERE {start} = ?1 \
               UNION SELECT s.entry_id, s.source_id, s.ref, s.span_start, s.span_end, w.depth + 1 \
               FROM sources s JOIN walk w ON {step} WHERE w.depth < {depth}) \
             SELECT entry_id, source_id, ref, span_start, span_end, MIN(depth) FROM walk \
             GROUP BY entry_id, source_id, ref, span_start, span_end \
             ORDER BY 6, 1, source_id IS NULL, source_id, ref"
        );
        self.with_reader(|conn| {
            block_on(async {
                let mut rows = conn.query(&sql, [id]).await?;
                let mut out = Vec::new();
                while let Some(row) = rows.next().await? {
                    out.extend(linked_row(&row)?);
                }
                Ok(out)
            })
        })
    }

    /// The direct sources of each of `ids`, in one statement per
    /// `IDS_PER_STATEMENT` of them: by entry, then as `linked` orders them.
    pub fn direct_sources(&self, ids: &[i64]) -> Result<Vec<Linked>> {
        self.with_reader(|conn| {
            block_on(async {
                let mut out = Vec::new();
                for chunk in ids.chunks(IDS_PER_STATEMENT) {
                    let marks = vec!["?"; chunk.len()].join(", ");
                    let sql = format!(
                        "SELECT entry_id, source_id, ref, span_start, span_end, 1 FROM sources \
                         WHERE entry_id IN ({marks}) ORDER BY 1, source_id IS NULL, source_id, ref"
                    );
                    let params: Vec<Value> = chunk.iter().map(|id| Value::Integer(*id)).collect();
                    let mut rows = conn.query(&sql, params).await?;
                    while let Some(row) = rows.next().await? {
                        out.extend(linked_row(&row)?);
                    }
                }
                Ok(out)
            })
        })
    }
}

/// The most ids one `direct_sources` statement names.
const IDS_PER_STATEMENT: usize = 500;

/// A `Linked` from a row of (entry_id, source_id, ref, span_start, span_end,
/// depth); `None` for a row that names no source.
fn linked_row(row: &libsql::Row) -> Result<Option<Linked>> {
    let source = match (row.get::<Option<i64>>(1)?, row.get::<Option<String>>(2)?) {
        (Some(of), _) => SourceRef::Entry(of),
        (None, Some(r)) => SourceRef::External(r),
        (None, None) => return Ok(None),
    };
    let span = match (row.get::<Option<i64>>(3)?, row.get::<Option<i64>>(4)?) {
        (Some(s), Some(e)) => Some((s, e)),
        _ => None,
    };
    let depth: i64 = row.get(5)?;
    Ok(Some(Linked { entry_id: row.get(0)?, source, span, depth: usize::try_from(depth).unwrap_or(0) }))
}
