//! `Embedder`: the built-in offline sentence embedder (`crate::embed`).

use std::path::PathBuf;
use std::sync::Arc;

use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray2};
use pyo3::prelude::*;

use super::errors::to_py;
use crate::embed;
use crate::error::Error;

#[pyclass(frozen, module = "contextforge._core")]
pub struct Embedder {
    inner: Arc<embed::Embedder>,
}

#[pymethods]
impl Embedder {
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        // Reading ~90 MB of weights takes a while: let other threads run.
        let inner = py.detach(|| embed::Embedder::load(&path)).map_err(to_py)?;
        Ok(Self { inner: Arc::new(inner) })
    }

    #[getter]
    fn dim(&self) -> usize {
        self.inner.dim()
    }

    fn embed<'py>(&self, py: Python<'py>, texts: Vec<String>) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let inner = Arc::clone(&self.inner);
        let rows = py
            .detach(move || {
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                let flat = inner.embed(&refs)?;
                Array2::from_shape_vec((refs.len(), inner.dim()), flat)
                    .map_err(|err| Error::Internal(format!("embedding shape: {err}")))
            })
            .map_err(to_py)?;
        Ok(rows.into_pyarray(py))
    }
}
