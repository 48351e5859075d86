//! `_core.Engine`: a thin handle over the engine. Each method owns its
//! arguments, calls one engine function off the event loop, converts the result.

use std::sync::Arc;

use parking_lot::RwLock;
use pyo3::prelude::*;

use super::call::awaitable;
use super::errors::{to_py, ClosedError};
use super::hit::Hit;
use crate::config::{Config, Recency, TokenizerSpec};
use crate::engine::{Engine as Core, Query};
use crate::entry::{Micros, NewEntry};
use crate::error::Error;

/// One item for `save_many`: (content, kind, scope, session_id, metadata_json, timestamp_us).
type Item = (String, String, Option<String>, Option<String>, Option<String>, Option<Micros>);

#[pyclass(frozen, module = "contextforge._core")]
pub struct Engine {
    core: RwLock<Option<Arc<Core>>>,
}

impl Engine {
    fn core(&self) -> PyResult<Arc<Core>> {
        self.core.read().clone().ok_or_else(|| ClosedError::new_err(Error::Closed.to_string()))
    }
}

#[pymethods]
impl Engine {
    #[staticmethod]
    #[pyo3(signature = (path, *, index_dir, tokenizer, recency_weight, recency_half_life_days, depth, flush_entries, flush_ms, busy_timeout_ms))]
    #[allow(clippy::too_many_arguments)]
    fn open(
        py: Python<'_>,
        path: String,
        index_dir: Option<String>,
        tokenizer: String,
        recency_weight: f32,
        recency_half_life_days: f32,
        depth: usize,
        flush_entries: usize,
        flush_ms: u64,
        busy_timeout_ms: u64,
    ) -> PyResult<Bound<'_, PyAny>> {
        let tokenizer = TokenizerSpec::parse(&tokenizer).map_err(to_py)?;
        let config = Config {
            path,
            index_dir: index_dir.map(Into::into),
            tokenizer,
            recency: Recency { weight: recency_weight, half_life_days: recency_half_life_days },
            depth,
            flush_entries,
            flush_ms,
            busy_timeout_ms,
        };
        awaitable(py, move || {
            let core = Core::open(config)?;
            Ok(Engine { core: RwLock::new(Some(Arc::new(core))) })
        })
    }

    /// Saves entries in one transaction and returns their ids.
    fn save_many<'py>(&self, py: Python<'py>, items: Vec<Item>) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        let entries: Vec<NewEntry> = items
            .into_iter()
            .map(|(content, kind, scope, session_id, metadata, timestamp)| NewEntry {
                content,
                kind,
                scope,
                session_id,
                metadata,
                timestamp,
            })
            .collect();
        awaitable(py, move || core.save_many(entries))
    }

    #[pyo3(signature = (text, scopes, budget, *, now=None, depth=None))]
    fn query<'py>(
        &self,
        py: Python<'py>,
        text: String,
        scopes: Option<Vec<Option<String>>>,
        budget: u64,
        now: Option<Micros>,
        depth: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        let query = Query { text, scopes, budget, now, depth };
        awaitable(py, move || {
            Ok(core.query(&query)?.into_iter().map(Hit::from).collect::<Vec<_>>())
        })
    }

    fn count<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        awaitable(py, move || core.count())
    }

    fn flush<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        awaitable(py, move || core.flush())
    }

    /// Flushes and releases the store; closing twice is harmless.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core.write().take();
        awaitable(py, move || match core {
            Some(core) => core.close(),
            None => Ok(()),
        })
    }

    #[getter]
    fn closed(&self) -> bool {
        self.core.read().is_none()
    }
}

/// The engine's defaults, so the Python config can be checked against them.
#[pyfunction]
pub fn default_config(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    use pyo3::types::PyDictMethods;
    let c = Config::default();
    let d = pyo3::types::PyDict::new(py);
    d.set_item("path", &c.path)?;
    d.set_item("tokenizer", "o200k")?;
    d.set_item("recency_weight", c.recency.weight)?;
    d.set_item("recency_half_life_days", c.recency.half_life_days)?;
    d.set_item("depth", c.depth)?;
    d.set_item("flush_entries", c.flush_entries)?;
    d.set_item("flush_ms", c.flush_ms)?;
    d.set_item("busy_timeout_ms", c.busy_timeout_ms)?;
    Ok(d)
}
