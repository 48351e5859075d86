//! What a call gives back: `Wait` and `Answer` for a call that may run on the loop's thread, and the
//! `Outcome` that turns a result into Python and settles a future with it.

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;

use crate::error::{Error, Result};
use crate::python::errors::to_py;

/// Whether a call may wait: for a lock another thread holds, an index catch-up, the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// On the loop's thread: answer at once, or say `Answer::WouldWait` having changed nothing.
    Never,
    /// On a worker: always answer.
    Allowed,
}

/// What a call that was given a `Wait` returns.
pub enum Answer<T> {
    Ready(T),
    /// Answering would have meant waiting (only under `Wait::Never`); nothing was changed.
    WouldWait,
}

impl<T> Answer<T> {
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Answer<U> {
        match self {
            Answer::Ready(value) => Answer::Ready(f(value)),
            Answer::WouldWait => Answer::WouldWait,
        }
    }
}

impl<T> From<Option<T>> for Answer<T> {
    fn from(value: Option<T>) -> Self {
        value.map_or(Answer::WouldWait, Answer::Ready)
    }
}

/// A finished call: turns its result into Python on a thread attached to the interpreter (the loop's, but
/// for the fallback).
pub type Outcome = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;

/// A call that may run on the loop's thread: under `Wait::Never` it must not wait; under `Wait::Allowed`
/// it always answers.
pub type Quick = Box<dyn FnMut(Wait) -> Answer<Outcome> + Send>;

/// The `Outcome` of `result`.
pub fn outcome<T>(result: Result<T>) -> Outcome
where
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    Box::new(move |py| {
        // Log records the call left (or anything else did) reach Python here.
        crate::python::logs::forward(py);
        result.map_err(to_py).and_then(|value| value.into_py_any(py))
    })
}

/// Runs `f`, turning a panic into `Error::Internal` instead of letting it cross into Python.
pub fn guarded<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_owned());
        Err(Error::Internal(what))
    })
}

/// A `Quick` call broke its promise to answer under `Wait::Allowed`.
pub fn unanswered() -> Error {
    Error::Internal("a call allowed to wait did not answer".into())
}

/// Runs a `Quick` call where it may wait: always an outcome.
pub fn answer_waiting(job: &mut Quick) -> Outcome {
    match job(Wait::Allowed) {
        Answer::Ready(outcome) => outcome,
        Answer::WouldWait => outcome::<()>(Err(unanswered())),
    }
}

/// Completes the future with `result` unless it is already done (cancelled).
pub fn settle(future: &Bound<'_, PyAny>, result: PyResult<Py<PyAny>>) -> PyResult<()> {
    if future.call_method0("done")?.is_truthy()? {
        return Ok(());
    }
    let py = future.py();
    match result {
        Ok(value) => future.call_method1("set_result", (value,))?,
        Err(err) => future.call_method1("set_exception", (err.into_value(py),))?,
    };
    Ok(())
}
