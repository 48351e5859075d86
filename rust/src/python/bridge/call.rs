//! The bridge's entry points, `awaitable` and `quick`: each creates an asyncio future on the running loop
//! and picks the path the call takes (see the map in `bridge/mod.rs`).

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

use super::fallback::settle_from_worker;
use super::handoff::{start, Handoff};
use super::inbox::inbox;
use super::outcome::{answer_waiting, guarded, outcome, Answer, Quick, Wait};
use super::pending::Pending;
use super::switch::{paths, Paths};
use super::workers;
use crate::error::Result;

/// Runs `f` on a worker thread and returns an awaitable of its result.
pub fn awaitable<'py, T, F>(py: Python<'py>, f: F) -> PyResult<Bound<'py, PyAny>>
where
    F: FnOnce() -> Result<T> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    awaitable_on(py, paths(), f)
}

/// `awaitable`, taking only the shortcuts in `paths`.
pub fn awaitable_on<'py, T, F>(py: Python<'py>, paths: Paths, f: F) -> PyResult<Bound<'py, PyAny>>
where
    F: FnOnce() -> Result<T> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    let event_loop = running_loop(py)?;
    let future = event_loop.call_method0("create_future")?;
    let target = future.clone().unbind();
    let job = move || outcome(guarded(f));
    match inbox(&event_loop) {
        Some(inbox) if paths.awake => {
            let handoff = Arc::new(Handoff::new());
            start(&inbox, Some(&handoff), target, job);
            let pending = Pending::started(future.unbind(), event_loop.unbind(), handoff, inbox, paths);
            Ok(Bound::new(py, pending)?.into_any())
        }
        Some(inbox) => {
            start(&inbox, None, target, job);
            Ok(future)
        }
        None => {
            let event_loop = event_loop.unbind();
            workers::spawn(move || settle_from_worker(event_loop, target, job()));
            Ok(future)
        }
    }
}

/// `awaitable` for a short call that can often answer at once: `f(Wait::Never)` must not wait (for a
/// lock another thread holds, an index catch-up, the network) and returns `Answer::WouldWait` when it
/// would have to; `f(Wait::Allowed)` always answers. Nothing runs until the awaitable is first awaited:
/// then, if the loop has nothing else to run, `f(Wait::Never)` runs right there on the loop's thread,
/// without the GIL, and otherwise `f(Wait::Allowed)` runs on a worker. With both shortcuts off it starts
/// on a worker at once.
///
/// Only the shortcuts in `paths` are taken (`paths()`, or fewer for a store
/// over the network).
pub fn quick<'py, T, F>(py: Python<'py>, paths: Paths, mut f: F) -> PyResult<Bound<'py, PyAny>>
where
    F: FnMut(Wait) -> Result<Answer<T>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    let event_loop = running_loop(py)?;
    let future = event_loop.call_method0("create_future")?;
    let mut job: Quick = Box::new(move |wait: Wait| match guarded(|| f(wait)) {
        Ok(Answer::Ready(value)) => Answer::Ready(outcome(Ok(value))),
        Ok(Answer::WouldWait) => Answer::WouldWait,
        Err(err) => Answer::Ready(outcome::<T>(Err(err))),
    });
    match inbox(&event_loop) {
        Some(inbox) if paths.inline || paths.awake => {
            let pending = Pending::quick(future.unbind(), event_loop.unbind(), inbox, job, paths);
            Ok(Bound::new(py, pending)?.into_any())
        }
        Some(inbox) => {
            start(&inbox, None, future.clone().unbind(), move || answer_waiting(&mut job));
            Ok(future)
        }
        None => {
            let (event_loop, target) = (event_loop.unbind(), future.clone().unbind());
            workers::spawn(move || settle_from_worker(event_loop, target, answer_waiting(&mut job)));
            Ok(future)
        }
    }
}

fn running_loop<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
    static GET_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let get_loop = GET_LOOP
        .get_or_try_init(py, || py.import("asyncio")?.getattr("get_running_loop").map(Bound::unbind))?;
    get_loop.bind(py).call0()
}
