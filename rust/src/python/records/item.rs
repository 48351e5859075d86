//! The records of writes and listings: `ItemRecord` (one entry to save),
//! `ListRecord` (a `list`/`count` filter) and `PatchRecord` (an update).

use numpy::PyReadonlyArray1;
use pyo3::prelude::*;

use super::scope::ScopeFilter;
use super::text::Text;
use crate::engine::{ListFilter, Patch};
use crate::entry::{Micros, NewEntry, Source, SourceRef};

/// One entry for `save_detailed`: a dict with these keys (`_convert.SaveItem`).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub struct ItemRecord {
    content: Text,
    kind: Text,
    scope: Option<Text>,
    session_id: Option<Text>,
    /// JSON text.
    metadata: Option<Text>,
    timestamp: Option<Micros>,
    expires_at: Option<Micros>,
    dedupe: bool,
    id: Option<i64>,
    scrub: bool,
    // Left out of the dict when not given: a bulk save holds one dict per item.
    #[pyo3(default)]
    key: Option<Text>,
    #[pyo3(default)]
    valid_from: Option<Micros>,
    #[pyo3(default)]
    valid_to: Option<Micros>,
    #[pyo3(default)]
    supersedes: Option<i64>,
    #[pyo3(default)]
    sources: Vec<SourceRecord>,
    #[pyo3(default)]
    cross_scope_sources: bool,
}

/// One source (`_convert.SourceRecord`): an entry id or an external
/// reference, with an optional `(start, end)` span.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub struct SourceRecord {
    entry: Option<i64>,
    #[pyo3(item("ref"))]
    reference: Option<Text>,
    span: Option<(i64, i64)>,
}

impl From<SourceRecord> for Source {
    fn from(r: SourceRecord) -> Self {
        let of = match (r.entry, r.reference) {
            (Some(id), _) => SourceRef::Entry(id),
            (None, Some(r)) => SourceRef::External(r.0),
            (None, None) => SourceRef::External(String::new()),
        };
        Source { of, span: r.span }
    }
}

impl ItemRecord {
    /// The engine's new entry, with its row of the embeddings when given.
    pub fn entry(self, embedding: Option<Vec<f32>>) -> NewEntry {
        NewEntry {
            content: self.content.0,
            kind: self.kind.0,
            scope: self.scope.map(String::from),
            session_id: self.session_id.map(String::from),
            metadata: self.metadata.map(String::from),
            timestamp: self.timestamp,
            expires_at: self.expires_at,
            dedupe: self.dedupe,
            embedding,
            id: self.id,
            scrub: self.scrub,
            key: self.key.map(String::from),
            valid_from: self.valid_from,
            valid_to: self.valid_to,
            supersedes: self.supersedes,
            sources: self.sources.into_iter().map(Source::from).collect(),
            cross_scope_sources: self.cross_scope_sources,
        }
    }
}

/// Which entries `list_page` and `count` see: a dict with these keys (`_convert.ListRecord`).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub struct ListRecord {
    scope: ScopeFilter,
    kind: Option<Text>,
    session_id: Option<Text>,
    since: Option<Micros>,
    until: Option<Micros>,
    as_of: Option<Micros>,
    include_superseded: bool,
    #[pyo3(default)]
    scope_prefix: Option<Text>,
    /// A metadata filter's JSON text (`crate::filter`).
    #[pyo3(default)]
    metadata: Option<Text>,
}

impl ListRecord {
    /// The engine's filter; a bad scope prefix or metadata filter is refused.
    pub fn filter(self) -> crate::error::Result<ListFilter> {
        let one: Option<Option<String>> = self.scope.into();
        Ok(ListFilter {
            scopes: one.map(|scope| vec![scope]),
            scope_prefix: self.scope_prefix.map(|p| crate::scope_path::normalize_prefix(&p.0)).transpose()?,
            metadata: self.metadata.map(|m| crate::filter::Filter::parse(&m.0)).transpose()?,
            kind: self.kind.map(String::from),
            session_id: self.session_id.map(String::from),
            since: self.since,
            until: self.until,
            alive_at: None,
            valid_at: self.as_of,
            all_versions: self.include_superseded,
        })
    }
}

/// What `update` changes: a dict (`_convert.PatchRecord`) where a key left out
/// keeps that field, and `None` for `metadata`, `scope` or `expires_at` removes it.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub struct PatchRecord<'py> {
    #[pyo3(default)]
    content: Option<Text>,
    #[pyo3(default)]
    kind: Option<Text>,
    /// JSON text.
    #[pyo3(default, from_py_with = given)]
    metadata: Option<Option<Text>>,
    #[pyo3(default, from_py_with = given)]
    scope: Option<Option<Text>>,
    #[pyo3(default, from_py_with = given)]
    expires_at: Option<Option<Micros>>,
    scrub: bool,
    #[pyo3(default)]
    embedding: Option<PyReadonlyArray1<'py, f32>>,
    #[pyo3(default)]
    key: Option<Text>,
}

/// A key that is present: `Some` of its value, which may be `None`.
pub(super) fn given<'py, T: for<'a> FromPyObject<'a, 'py, Error = PyErr>>(
    obj: &Bound<'py, PyAny>,
) -> PyResult<Option<Option<T>>> {
    obj.extract().map(Some)
}

impl From<PatchRecord<'_>> for Patch {
    fn from(r: PatchRecord<'_>) -> Self {
        Patch {
            content: r.content.map(String::from),
            kind: r.kind.map(String::from),
            metadata: r.metadata.map(|m| m.map(String::from)),
            scope: r.scope.map(|s| s.map(String::from)),
            embedding: r.embedding.map(|v| v.as_array().to_vec()),
            expires_at: r.expires_at,
            scrub: r.scrub,
            key: r.key.map(String::from),
        }
    }
}
