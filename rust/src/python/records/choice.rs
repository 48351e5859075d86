//! `Parsed<T>`: an engine enum read from its Python name (`"rrf"`, `"drop"`, ...).

use pyo3::prelude::*;
use pyo3::types::PyString;

use super::text::Text;
use crate::config::{Eviction, Fusion, TokenizerSpec};
use crate::engine::InjectionPolicy;
use crate::error::Result;
use crate::python::errors::to_py;
use crate::render::Order;

/// An enum with names: parsed by the engine's own `parse` (whose error,
/// `InvalidInputError`, lists the names), named back for `default_config`.
pub trait Named: Sized {
    fn parse(name: &str) -> Result<Self>;
    fn name(&self) -> String;
}

/// A `T` read from its name; an unknown name raises `InvalidInputError`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Parsed<T>(pub T);

impl<'a, 'py, T: Named> FromPyObject<'a, 'py> for Parsed<T> {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let Text(name) = obj.extract()?;
        T::parse(&name).map(Parsed).map_err(to_py)
    }
}

impl<'py, T: Named> IntoPyObject<'py> for Parsed<T> {
    type Target = PyString;
    type Output = Bound<'py, PyString>;
    type Error = std::convert::Infallible;

    fn into_pyobject(self, py: Python<'py>) -> std::result::Result<Self::Output, Self::Error> {
        Ok(PyString::new(py, &self.0.name()))
    }
}

impl Named for Fusion {
    fn parse(name: &str) -> Result<Self> {
        Fusion::parse(name)
    }
    fn name(&self) -> String {
        Fusion::name(*self).to_owned()
    }
}

impl Named for Eviction {
    fn parse(name: &str) -> Result<Self> {
        Eviction::parse(name)
    }
    fn name(&self) -> String {
        match self {
            Eviction::Oldest => "oldest",
            Eviction::LeastRecentlyReturned => "least_recently_returned",
        }
        .to_owned()
    }
}

impl Named for TokenizerSpec {
    fn parse(name: &str) -> Result<Self> {
        TokenizerSpec::parse(name)
    }
    fn name(&self) -> String {
        match self {
            TokenizerSpec::O200k => "o200k".to_owned(),
            TokenizerSpec::Cl100k => "cl100k".to_owned(),
            TokenizerSpec::File(path) => path.display().to_string(),
        }
    }
}

impl Named for InjectionPolicy {
    fn parse(name: &str) -> Result<Self> {
        InjectionPolicy::parse(name)
    }
    fn name(&self) -> String {
        match self {
            InjectionPolicy::Flag => "flag",
            InjectionPolicy::Drop => "drop",
        }
        .to_owned()
    }
}

impl Named for Order {
    fn parse(name: &str) -> Result<Self> {
        Order::parse(name)
    }
    fn name(&self) -> String {
        match self {
            Order::Score => "score",
            Order::Chronological => "chronological",
            Order::EdgesFirst => "edges",
        }
        .to_owned()
    }
}
