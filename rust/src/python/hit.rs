//! The `Hit` class: one entry, converted to Python lazily. A value: it compares
//! by its fields, pickles, copies, and can be built by hand (for test fakes).

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDateTime, PyDelta, PyDict, PyTuple, PyTzInfo};

use super::records::ExplainRecord;
use crate::entry::{Entry, Explain, Hit as EngineHit, Micros};

/// An entry returned by a query (with a score) or by a lookup (`score` None).
#[pyclass(frozen, name = "Hit", module = "contextforge._core")]
pub struct Hit {
    entry: Entry,
    score: Option<f32>,
    risks: Vec<String>,
    explain: Option<Explain>,
    /// Whether the entry held when it was read (at the call's `now`).
    current: bool,
}

impl From<EngineHit> for Hit {
    fn from(hit: EngineHit) -> Self {
        Self {
            current: hit.entry.valid_at(crate::store::now_micros()),
            entry: hit.entry,
            // NaN: listed by a query without words, so without relevance.
            score: (!hit.score.is_nan()).then_some(hit.score),
            risks: hit.risks.iter().map(|r| (*r).to_owned()).collect(),
            explain: hit.explain,
        }
    }
}

impl From<Entry> for Hit {
    fn from(entry: Entry) -> Self {
        Self::lookup(EngineHit::new(entry, 0.0))
    }
}

impl Hit {
    /// An entry read by id or listed: it has no score.
    pub fn lookup(hit: EngineHit) -> Self {
        Self { score: None, ..hit.into() }
    }

    /// The hit of a call whose clock was `now`: `current` says whether it held then.
    pub fn read_at(self, now: Micros) -> Self {
        Self { current: self.entry.valid_at(now), ..self }
    }

    /// The fields that make a hit's value (those `to_dict` shows), for equality.
    fn same_value(&self, other: &Self) -> bool {
        let (a, b) = (&self.entry, &other.entry);
        let metadata = |e: &Entry| -> Option<serde_json::Value> {
            serde_json::from_str(e.metadata.as_deref().unwrap_or("{}")).ok()
        };
        (a.id, &a.content, &a.kind, &a.scope, &a.session_id, a.timestamp, a.tokens)
            == (b.id, &b.content, &b.kind, &b.scope, &b.session_id, b.timestamp, b.tokens)
            && (a.expires_at, a.updated_at) == (b.expires_at, b.updated_at)
            && (&a.validity.key, a.valid_from(), a.validity.valid_to, a.validity.superseded_by)
                == (&b.validity.key, b.valid_from(), b.validity.valid_to, b.validity.superseded_by)
            && self.score.map(f32::to_bits) == other.score.map(f32::to_bits)
            && self.risks == other.risks
            && metadata(a) == metadata(b)
    }
}

fn json<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    static JSON: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    JSON.get_or_try_init(py, || py.import("json").map(Bound::unbind))?.bind(py).getattr(name)
}

#[pymethods]
impl Hit {
    /// A hit built by hand, for tests and fakes: `timestamp` and `expires_at`
    /// are aware datetimes, `metadata` a JSON-compatible dict.
    #[new]
    #[pyo3(signature = (id, content, kind="note".to_owned(), *, scope=None, session_id=None, timestamp=None, tokens=0, metadata=None, score=None, expires_at=None, updated_at=None, risks=Vec::new(), key=None, valid_from=None, valid_to=None, superseded_by=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        id: i64,
        content: String,
        kind: String,
        scope: Option<String>,
        session_id: Option<String>,
        timestamp: Option<Bound<'_, PyAny>>,
        tokens: u32,
        metadata: Option<Bound<'_, PyDict>>,
        score: Option<f32>,
        expires_at: Option<Bound<'_, PyAny>>,
        updated_at: Option<Bound<'_, PyAny>>,
        risks: Vec<String>,
        key: Option<String>,
        valid_from: Option<Bound<'_, PyAny>>,
        valid_to: Option<Bound<'_, PyAny>>,
        superseded_by: Option<i64>,
    ) -> PyResult<Self> {
        let micros = |t: Option<Bound<'_, PyAny>>| t.map(|t| from_datetime(py, &t)).transpose();
        let metadata = match metadata {
            Some(m) if !m.is_empty() => Some(json(py, "dumps")?.call1((m,))?.extract::<String>()?),
            _ => None,
        };
        let timestamp = micros(timestamp)?.unwrap_or(0);
        let entry = Entry {
            id,
            content,
            kind,
            scope,
            session_id,
            metadata,
            timestamp,
            tokens,
            expires_at: micros(expires_at)?,
            updated_at: micros(updated_at)?,
            risk_stamp: None,
            validity: crate::entry::Validity {
                key,
                // Stored as given only when it differs from the timestamp, as the store does.
                valid_from: micros(valid_from)?.filter(|&from| from != timestamp),
                valid_to: micros(valid_to)?,
                superseded_by,
            },
        };
        let current = entry.valid_at(crate::store::now_micros());
        Ok(Self { entry, score, risks, explain: None, current })
    }

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
    /// Relevance times the recency boost for a query's hit; `None` for an entry
    /// read by id or listed.
    #[getter]
    fn score(&self) -> Option<f32> {
        self.score
    }
    /// Prompt-injection risks found in the content, e.g. `["instruction_override"]`.
    #[getter]
    fn risks(&self) -> Vec<String> {
        self.risks.clone()
    }
    /// With `query(..., explain=True)`: the score's parts, `score = relevance *
    /// recency` (relevance is BM25, fused with `dense` cosine similarity in a
    /// hybrid query), the MMR `diversity` penalty, and the hit's rank among the
    /// candidates before packing.
    #[getter]
    fn explain(&self) -> Option<ExplainRecord> {
        self.explain.as_ref().map(|e| ExplainRecord::new(e, self.score))
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
    /// When the entry expires, as an aware UTC datetime; `None` for a permanent entry.
    #[getter]
    fn expires_at<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.entry.expires_at.map(|at| to_datetime(py, at)).transpose()
    }
    /// When `update` last changed the entry; `None` if it never did.
    #[getter]
    fn updated_at<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.entry.updated_at.map(|at| to_datetime(py, at)).transpose()
    }
    /// The slot the entry fills in its scope (`save(..., key=)`); `None` for an
    /// entry saved without one.
    #[getter]
    fn key(&self) -> Option<&str> {
        self.entry.validity.key.as_deref()
    }
    /// When the fact starts to hold, as an aware UTC datetime (by default, its timestamp).
    #[getter]
    fn valid_from<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_datetime(py, self.entry.valid_from())
    }
    /// When the fact stopped (or stops) holding; `None` while it is open.
    #[getter]
    fn valid_to<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.entry.validity.valid_to.map(|at| to_datetime(py, at)).transpose()
    }
    /// The id of the entry that superseded this one; `None` if nothing has.
    #[getter]
    fn superseded_by(&self) -> Option<i64> {
        self.entry.validity.superseded_by
    }
    /// Whether the entry held when it was read: at the call's `now=`, else
    /// the clock. An entry without a key or an interval always holds.
    #[getter]
    fn current(&self) -> bool {
        self.current
    }
    /// The entry's metadata as a new dict (empty when none was saved).
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json(py, "loads")?.call1((self.entry.metadata.as_deref().unwrap_or("{}"),))
    }

    /// The hit's fields as a new dict of plain values (datetimes stay
    /// datetimes; `json.dumps(hit.to_dict(), default=str)` writes it).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("id", self.entry.id)?;
        d.set_item("content", &self.entry.content)?;
        d.set_item("kind", &self.entry.kind)?;
        d.set_item("scope", self.scope())?;
        d.set_item("session_id", self.session_id())?;
        d.set_item("timestamp", self.timestamp(py)?)?;
        d.set_item("tokens", self.entry.tokens)?;
        d.set_item("metadata", self.metadata(py)?)?;
        d.set_item("score", self.score)?;
        d.set_item("expires_at", self.expires_at(py)?)?;
        d.set_item("updated_at", self.updated_at(py)?)?;
        d.set_item("risks", self.risks.clone())?;
        d.set_item("key", self.key())?;
        d.set_item("valid_from", self.valid_from(py)?)?;
        d.set_item("valid_to", self.valid_to(py)?)?;
        d.set_item("superseded_by", self.superseded_by())?;
        Ok(d)
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<Hit>().is_ok_and(|o| self.same_value(o.get()))
    }

    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (self.entry.id, &self.entry.content).hash(&mut h);
        h.finish()
    }

    /// Pickling and `copy`: rebuilt from its fields (an `explain` is dropped).
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let this = slf.get();
        let args = (this.entry.id, this.entry.content.clone(), this.entry.kind.clone());
        let kwargs = this.to_dict(py)?;
        for positional in ["id", "content", "kind"] {
            kwargs.del_item(positional)?;
        }
        let rebuild = py.import("contextforge._core")?.getattr("_rebuild_hit")?;
        PyTuple::new(py, [rebuild.into_any(), (slf.get_type(), args, kwargs).into_pyobject(py)?.into_any()])
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let this = slf.get();
        let mut preview: String = this.entry.content.chars().take(60).collect();
        if preview.len() < this.entry.content.len() {
            preview.push('…');
        }
        let py = slf.py();
        let repr = |v: Bound<'_, PyAny>| v.repr().map(|r| r.to_string());
        let score = this.score.map_or_else(|| "None".to_owned(), |s| format!("{s:.4}"));
        Ok(format!(
            "Hit(id={}, score={score}, scope={}, kind={}, content={})",
            this.entry.id,
            repr(this.scope().into_pyobject(py)?.into_any())?,
            repr(this.entry.kind.as_str().into_pyobject(py)?.into_any())?,
            repr(preview.into_pyobject(py)?.into_any())?,
        ))
    }
}

/// `cls(*args, **kwargs)`: what a pickled `Hit` is rebuilt by.
#[pyfunction]
pub fn _rebuild_hit<'py>(
    cls: &Bound<'py, PyAny>,
    args: &Bound<'py, PyTuple>,
    kwargs: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyAny>> {
    cls.call(args, Some(kwargs))
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

/// Microseconds since the epoch of an aware datetime.
fn from_datetime(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<Micros> {
    use super::errors::InvalidInputError;
    if value.getattr("utcoffset").and_then(|f| f.call0()).map_or(true, |o| o.is_none()) {
        return Err(InvalidInputError::new_err("Hit times must be timezone-aware datetimes"));
    }
    let utc = PyTzInfo::utc(py)?;
    let epoch = PyDateTime::new(py, 1970, 1, 1, 0, 0, 0, 0, Some(&utc))?;
    let one = PyDelta::new(py, 0, 0, 1, false)?;
    value.call_method1("__sub__", (epoch,))?.call_method1("__floordiv__", (one,))?.extract()
}
