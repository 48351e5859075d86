//! The `Hit` class: one ranked entry, converted to Python lazily.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDateTime, PyDelta, PyTzInfo};

use crate::entry::{Entry, Hit as EngineHit, Micros};

/// An entry returned by a query (with a score) or by a lookup (score 0).
#[pyclass(frozen, name = "Hit", module = "contextforge._core")]
pub struct Hit {
    entry: Entry,
    #[pyo3(get)]
    score: f32,
    risks: Vec<&'static str>,
    explain: Option<crate::entry::Explain>,
}

impl From<EngineHit> for Hit {
    fn from(hit: EngineHit) -> Self {
        Self { entry: hit.entry, score: hit.score, risks: hit.risks, explain: hit.explain }
    }
}

impl From<Entry> for Hit {
    fn from(entry: Entry) -> Self {
        EngineHit::new(entry, 0.0).into()
    }
}

#[pymethods]
impl Hit {
    #[getter]
    fn id(&self) -> i64 {
        self.entry.id
    }
    #[getter]
    fn content(&self) -> &str {
        &self.entry.content
    }
    #[getter]
    fn kind(&self) -> &str {
        &self.entry.kind
    }
    #[getter]
    fn scope(&self) -> Option<&str> {
        self.entry.scope.as_deref()
    }
    #[getter]
    fn session_id(&self) -> Option<&str> {
        self.entry.session_id.as_deref()
    }
    /// Prompt-injection risks found in the content, e.g. `["instruction_override"]`.
    #[getter]
    fn risks(&self) -> Vec<&'static str> {
        self.risks.clone()
    }
    /// With `query(..., explain=True)`: the score's parts, `score = relevance *
    /// recency` (relevance is BM25, fused with `dense` cosine similarity in a
    /// hybrid query), the MMR `diversity` penalty, and the hit's rank among the
    /// candidates before packing.
    #[getter]
    fn explain<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, pyo3::types::PyDict>>> {
        use pyo3::types::PyDictMethods;
        let Some(e) = self.explain else { return Ok(None) };
        let d = pyo3::types::PyDict::new(py);
        d.set_item("relevance", e.relevance)?;
        d.set_item("bm25", e.bm25)?;
        if let Some(dense) = e.dense {
            d.set_item("dense", dense)?;
        }
        d.set_item("recency", e.recency)?;
        d.set_item("diversity", e.diversity)?;
        d.set_item("final", self.score)?;
        d.set_item("rank", e.rank)?;
        Ok(Some(d))
    }
    #[getter]
    fn tokens(&self) -> u32 {
        self.entry.tokens
    }
    /// When the entry happened, as an aware UTC datetime.
    #[getter]
    fn timestamp<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_datetime(py, self.entry.timestamp)
    }
    /// The entry's metadata as a new dict (empty when none was saved).
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        static LOADS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        let loads = LOADS.get_or_try_init(py, || {
            py.import("json")?.getattr("loads").map(Bound::unbind)
        })?;
        loads.bind(py).call1((self.entry.metadata.as_deref().unwrap_or("{}"),))
    }
    fn __repr__(&self) -> String {
        let mut preview: String = self.entry.content.chars().take(60).collect();
        if preview.len() < self.entry.content.len() {
            preview.push('…');
        }
        format!(
            "Hit(id={}, score={:.4}, scope={:?}, kind={:?}, content={:?})",
            self.entry.id, self.score, self.entry.scope, self.entry.kind, preview
        )
    }
}

fn to_datetime(py: Python<'_>, micros: Micros) -> PyResult<Bound<'_, PyAny>> {
    let utc = PyTzInfo::utc(py)?;
    let epoch = PyDateTime::new(py, 1970, 1, 1, 0, 0, 0, 0, Some(&utc))?;
    let days = micros.div_euclid(86_400_000_000);
    let rest = micros.rem_euclid(86_400_000_000);
    let delta = PyDelta::new(
        py,
        i32::try_from(days).unwrap_or(i32::MAX),
        i32::try_from(rest / 1_000_000).unwrap_or(0),
        i32::try_from(rest % 1_000_000).unwrap_or(0),
        false,
    )?;
    epoch.call_method1("__add__", (delta,))
}
