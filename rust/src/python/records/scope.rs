//! Which scopes a call reaches, read from what Python passes: `ALL_SCOPES`, one
//! scope (`None` being the global one), or a list of them.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

use super::text::Text;

/// Whether `obj` is `contextforge.ALL_SCOPES`.
fn is_all_scopes(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    static ALL_SCOPES: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let py = obj.py();
    let all = ALL_SCOPES
        .get_or_try_init(py, || py.import("contextforge.scope")?.getattr("ALL_SCOPES").map(Bound::unbind))?;
    Ok(obj.is(all.bind(py)))
}

/// What `query` and `context` search: `ALL_SCOPES`, or a list of scopes where
/// `None` stands for the global entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scopes {
    All,
    Listed(Vec<Option<String>>),
}

impl<'a, 'py> FromPyObject<'a, 'py> for Scopes {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if is_all_scopes(&obj)? {
            return Ok(Self::All);
        }
        let listed: Vec<Option<Text>> = obj.extract()?;
        Ok(Self::Listed(listed.into_iter().map(|s| s.map(String::from)).collect()))
    }
}

impl From<Scopes> for Option<Vec<Option<String>>> {
    /// The engine's form: `None` searches every scope.
    fn from(scopes: Scopes) -> Self {
        match scopes {
            Scopes::All => None,
            Scopes::Listed(listed) => Some(listed),
        }
    }
}

/// What `list` and `count` select: `ALL_SCOPES`, or one scope (`None`: global entries).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScopeFilter {
    All,
    One(Option<String>),
}

impl<'a, 'py> FromPyObject<'a, 'py> for ScopeFilter {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if is_all_scopes(&obj)? {
            return Ok(Self::All);
        }
        let one: Option<Text> = obj.extract()?;
        Ok(Self::One(one.map(String::from)))
    }
}

impl From<ScopeFilter> for Option<Option<String>> {
    /// The engine's form: `None` selects every scope, `Some(None)` global entries.
    fn from(filter: ScopeFilter) -> Self {
        match filter {
            ScopeFilter::All => None,
            ScopeFilter::One(scope) => Some(scope),
        }
    }
}
