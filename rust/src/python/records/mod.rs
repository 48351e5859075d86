//! The records that cross the Python–Rust boundary: one typed record per crossing.
//!
//! Python (`_convert.py`) checks the caller's arguments and builds one record;
//! the binding reads it here with `#[derive(FromPyObject)]` and turns it into
//! the engine's own type. Results that Python sees as dicts cross back as records too.
//!
//! | record                        | read from (Python)                   | becomes                     |
//! |-------------------------------|--------------------------------------|-----------------------------|
//! | [`ConfigRecord`]              | `Config` (attributes)                | `config::Config`            |
//! | [`QueryRecord`]               | `_convert.query_record` (dict)       | `engine::Query`, `Order`    |
//! | [`ItemRecord`]                | `_convert.SaveItem` (dict)           | `entry::NewEntry`           |
//! | [`ListRecord`]                | `_convert.list_record` (dict)        | `engine::ListFilter`        |
//! | [`PatchRecord`]               | `_convert.PatchRecord` (dict)        | `engine::Patch`             |
//! | [`TimingsRecord`]             | engine `Timings`                     | `Hits.timings` (dict)       |
//! | [`ExplainRecord`]             | engine `Explain`                     | `Hit.explain` (dict)        |
//! | [`ForgetRecord`]              | `_convert.ForgetRecord` (dict)       | `store::Forget`             |
//! | [`LoggedRecord`]              | store `Logged`                       | `Change` (dataclass)        |
//! | [`ReadRecord`]                | store `Read`                         | `Read` (dataclass)          |
//! | [`ReceiptRecord`]             | engine `Receipt`                     | `Forgotten` (dataclass)     |
//!
//! The parts they are made of: [`Text`] (a `str`; a lone surrogate raises
//! `InvalidInputError`), [`Parsed`](choice::Parsed) (an enum from its name), [`Scopes`](scope::Scopes)
//! and [`ScopeFilter`](scope::ScopeFilter) (`ALL_SCOPES`, one scope or a list).
//!
//! A method takes a record as [`Record<T>`], which raises a field's own error
//! (`InvalidInputError`, `OverflowError`, ...) rather than the `TypeError` the
//! derive wraps it in, so that callers see the error a plain argument would raise.

mod choice;
mod config;
mod forget;
mod item;
mod query;
mod results;
mod scope;
mod text;

pub use config::{ConfigRecord, KeyBytes};
pub use forget::{ForgetRecord, ReceiptRecord};
pub use item::{ItemRecord, ListRecord, PatchRecord};
pub use query::QueryRecord;
pub use results::{ExplainRecord, LinkedRecord, LoggedRecord, ReadRecord, TimingsRecord};
pub use scope::ScopeFilter;
pub use text::{strings, Text};

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use crate::python::errors::InvalidInputError;

/// A record read as a method argument; see the module documentation.
pub struct Record<T>(pub T);

impl<'a, 'py, T> FromPyObject<'a, 'py> for Record<T>
where
    T: FromPyObject<'a, 'py>,
{
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        T::extract(obj).map(Record).map_err(|err| surface(obj.py(), err.into()))
    }
}

/// The error of the field that failed, instead of the derive's `TypeError`
/// ("failed to extract field QueryRecord.scopes") around it. A `TypeError`
/// (a value of the wrong type) stays one, its message naming the field.
fn surface(py: Python<'_>, err: PyErr) -> PyErr {
    const WRAPPED: &str = "failed to extract field ";
    let mut field = None;
    let mut inner = err;
    loop {
        if !inner.is_instance_of::<PyTypeError>(py) {
            break;
        }
        let message = inner.value(py).to_string();
        let Some(path) = message.strip_prefix(WRAPPED) else { break };
        let Some(cause) = inner.cause(py) else { break };
        field = Some(path.rsplit('.').next().unwrap_or(path).to_owned());
        inner = cause;
    }
    let Some(field) = field else { return inner };
    if inner.is_instance_of::<InvalidInputError>(py) {
        let message = inner.value(py).to_string();
        if message == format!("text {}", text::UNENCODABLE) {
            return text::unencodable_field(py, &field, inner);
        }
        return inner;
    }
    if inner.is_instance_of::<PyTypeError>(py) {
        let err = PyTypeError::new_err(format!("{field}: {}", inner.value(py)));
        err.set_cause(py, Some(inner));
        return err;
    }
    inner
}
