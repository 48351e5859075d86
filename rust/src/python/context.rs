//! The `Context` class: a rendered block of untrusted memory.

use pyo3::prelude::*;

use super::hit::Hit;
use crate::render::{citation, unknown_citations, Context as EngineContext};

/// A prompt-ready block of retrieved memory and the hits in it.
#[pyclass(frozen, name = "Context", module = "contextforge._core")]
pub struct Context {
    inner: EngineContext,
}

impl From<EngineContext> for Context {
    fn from(inner: EngineContext) -> Self {
        Self { inner }
    }
}

#[pymethods]
impl Context {
    /// The whole block, ready to put in a prompt; empty when no hit fits.
    #[getter]
    fn text(&self) -> &str {
        &self.inner.text
    }
    /// The block's size in the store's tokenizer (never more than the budget;
    /// 0 when empty).
    #[getter]
    fn tokens(&self) -> u32 {
        self.inner.tokens
    }
    /// The hits in block order.
    #[getter]
    fn hits(&self) -> Vec<Hit> {
        self.inner.hits.iter().cloned().map(Hit::from).collect()
    }
    /// The citation ids in block order, e.g. `["mem:12", "mem:7"]`.
    #[getter]
    fn citations(&self) -> Vec<String> {
        self.inner.hits.iter().map(|h| citation(h.entry.id)).collect()
    }
    /// Citation ids in `answer` that are not in this block.
    fn unknown_citations(&self, answer: &str) -> Vec<String> {
        unknown_citations(answer, &self.inner)
    }
    fn __str__(&self) -> &str {
        &self.inner.text
    }
    fn __repr__(&self) -> String {
        format!("Context(hits={}, tokens={})", self.inner.hits.len(), self.inner.tokens)
    }
}
