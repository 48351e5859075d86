//! `Text`: a Python `str` read as Rust text, a lone surrogate refused with `InvalidInputError`.

use pyo3::exceptions::PyUnicodeEncodeError;
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::python::errors::InvalidInputError;

/// What a refused string is told, after the name of what held it.
pub const UNENCODABLE: &str = "must be valid Unicode (it holds a lone surrogate)";

/// A `str` that is valid Unicode. Python strings may hold lone surrogates
/// (`"\ud800"`), which no Rust `String` can: those are the caller's mistake,
/// so they raise `InvalidInputError` (a `ValueError`), not `UnicodeEncodeError`.
#[derive(Debug, Clone, Default, PartialEq, Eq, IntoPyObject)]
pub struct Text(pub String);

impl From<Text> for String {
    fn from(text: Text) -> Self {
        text.0
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for Text {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let s = obj.cast::<PyString>()?;
        match s.to_str() {
            Ok(s) => Ok(Self(s.to_owned())),
            Err(err) => Err(unencodable(obj.py(), "text", err)),
        }
    }
}

/// `InvalidInputError` naming `what` for a `UnicodeEncodeError`; any other error as it is.
pub fn unencodable(py: Python<'_>, what: &str, cause: PyErr) -> PyErr {
    if !cause.is_instance_of::<PyUnicodeEncodeError>(py) {
        return cause;
    }
    let err = InvalidInputError::new_err(format!("{what} {UNENCODABLE}"));
    err.set_cause(py, Some(cause));
    err
}

/// The strings of a list of `Text`.
pub fn strings(texts: Vec<Text>) -> Vec<String> {
    texts.into_iter().map(String::from).collect()
}

/// `err` (a `Text`'s refusal) told again with the name of the field that held the text.
pub fn unencodable_field(py: Python<'_>, field: &str, err: PyErr) -> PyErr {
    let named = InvalidInputError::new_err(format!("{field} {UNENCODABLE}"));
    named.set_cause(py, err.cause(py));
    named
}
