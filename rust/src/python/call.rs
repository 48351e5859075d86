//! The one place engine work leaves the event loop and the GIL.
//!
//! Methods run the engine closure on the runtime's blocking pool (libSQL's local
//! calls block), without the GIL, and hand Python an awaitable. A panic becomes
//! an `InternalError` instead of crossing into Python.

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::prelude::*;

use super::errors::{to_py, InternalError};
use crate::error::{Error, Result};
use crate::runtime::runtime;

fn guarded<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_owned());
        Err(Error::Internal(what))
    })
}

/// Runs `f` on the blocking pool and returns an awaitable of its result.
pub fn awaitable<'py, T, F>(py: Python<'py>, f: F) -> PyResult<Bound<'py, PyAny>>
where
    F: FnOnce() -> Result<T> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    pyo3_async_runtimes::tokio::future_into_py(py, async move {
        match runtime().spawn_blocking(move || guarded(f)).await {
            Ok(result) => result.map_err(to_py),
            Err(join) => Err(InternalError::new_err(join.to_string())),
        }
    })
}
