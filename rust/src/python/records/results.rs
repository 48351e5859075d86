//! The records results cross back in: `TimingsRecord` (`Hits.timings`) and
//! `ExplainRecord` (`Hit.explain`), both dicts on the Python side.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::engine::Timings;
use crate::entry::SourceRef;
use crate::entry::{Explain, Micros};
use crate::store::{ChangeOp, Linked, Logged, Read};

/// Where a query's time went, in microseconds (`_core._Timings` in the stub).
#[derive(Debug, Clone, Copy, IntoPyObject)]
pub struct TimingsRecord {
    sync_us: f64,
    search_us: f64,
    pack_us: f64,
    total_us: f64,
}

impl From<Timings> for TimingsRecord {
    fn from(t: Timings) -> Self {
        Self { sync_us: t.sync_us, search_us: t.search_us, pack_us: t.pack_us, total_us: t.total_us }
    }
}

/// A hit's score parts (`_core._Explain` in the stub); `dense` only in a hybrid query.
#[derive(Debug, Clone, Copy)]
pub struct ExplainRecord {
    pub relevance: f32,
    pub bm25: f32,
    pub bm25_context: f32,
    pub dense: Option<f32>,
    pub recency: f32,
    pub diversity: f32,
    /// The hit's score.
    pub final_: Option<f32>,
    pub rank: usize,
}

impl ExplainRecord {
    pub fn new(e: &Explain, score: Option<f32>) -> Self {
        Self {
            relevance: e.relevance,
            bm25: e.bm25,
            bm25_context: e.bm25_context,
            dense: e.dense,
            recency: e.recency,
            diversity: e.diversity,
            final_: score,
            rank: e.rank,
        }
    }
}

impl<'py> IntoPyObject<'py> for ExplainRecord {
    type Target = PyDict;
    type Output = Bound<'py, PyDict>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Self::Output> {
        let d = PyDict::new(py);
        d.set_item("relevance", self.relevance)?;
        d.set_item("bm25", self.bm25)?;
        d.set_item("bm25_context", self.bm25_context)?;
        if let Some(dense) = self.dense {
            d.set_item("dense", dense)?;
        }
        d.set_item("recency", self.recency)?;
        d.set_item("diversity", self.diversity)?;
        d.set_item("final", self.final_)?;
        d.set_item("rank", self.rank)?;
        Ok(d)
    }
}

/// One change of the audit trail (`_core._Logged` in the stub), a dict.
#[derive(Debug, Clone, IntoPyObject)]
pub struct LoggedRecord {
    seq: i64,
    entry_id: i64,
    op: &'static str,
    at: Option<Micros>,
    scope: Option<String>,
    key: Option<String>,
    forget: Option<String>,
}

impl From<Logged> for LoggedRecord {
    fn from(l: Logged) -> Self {
        let op = match (l.op, &l.forget) {
            (ChangeOp::Insert, _) => "insert",
            (ChangeOp::Update, _) => "update",
            (ChangeOp::Delete, None) => "delete",
            (ChangeOp::Delete, Some(_)) => "forget",
        };
        Self { seq: l.seq, entry_id: l.entry_id, op, at: l.at, scope: l.scope, key: l.key, forget: l.forget }
    }
}

/// One provenance link (`_core._Linked` in the stub), a dict.
#[derive(Debug, Clone, IntoPyObject)]
pub struct LinkedRecord {
    entry_id: i64,
    source_id: Option<i64>,
    #[pyo3(item("ref"))]
    reference: Option<String>,
    span: Option<(i64, i64)>,
    depth: usize,
}

impl From<Linked> for LinkedRecord {
    fn from(l: Linked) -> Self {
        let (source_id, reference) = match l.source {
            SourceRef::Entry(id) => (Some(id), None),
            SourceRef::External(r) => (None, Some(r)),
        };
        Self { entry_id: l.entry_id, source_id, reference, span: l.span, depth: l.depth }
    }
}

/// One audited read (`_core._Read` in the stub), a dict.
#[derive(Debug, Clone, IntoPyObject)]
pub struct ReadRecord {
    seq: i64,
    at: Micros,
    /// `None`: every scope.
    scopes: Option<Vec<Option<String>>>,
    query_hash: String,
    query: Option<String>,
    ids: Vec<i64>,
}

impl From<(i64, Read)> for ReadRecord {
    fn from((seq, r): (i64, Read)) -> Self {
        Self { seq, at: r.at, scopes: r.scopes, query_hash: r.query_hash, query: r.query, ids: r.ids }
    }
}
