//! The one place engine work leaves the event loop and the GIL.
//!
//! A method creates an asyncio future on the running loop, runs the engine
//! closure on the runtime's blocking pool (libSQL's local calls block) without
//! the GIL, and settles the future through `call_soon_threadsafe`. A panic
//! becomes an `InternalError` instead of crossing into Python.
//!
//! Why not pyo3-async-runtimes: its completion path can still hold a thread state
//! when the interpreter starts finalising right after `asyncio.run` returns, which
//! aborts the process ("PyGILState_Release ... finalizing"). Here every attach is
//! counted, and an `atexit` hook waits for the count to drain and bars new ones.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::IntoPyObjectExt;

use super::errors::to_py;
use crate::error::{Error, Result};
use crate::runtime::runtime;

static ATTACHED: AtomicUsize = AtomicUsize::new(0);
static SHUTTING_DOWN: AtomicBool = AtomicBool::new(false);

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
    static GET_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let get_loop = GET_LOOP.get_or_try_init(py, || {
        py.import("asyncio")?.getattr("get_running_loop").map(Bound::unbind)
    })?;
    let event_loop = get_loop.bind(py).call0()?;
    let future = event_loop.call_method0("create_future")?;
    let (event_loop, target) = (event_loop.unbind(), future.clone().unbind());
    runtime().spawn_blocking(move || settle_from_worker(event_loop, target, guarded(f)));
    Ok(future)
}

fn settle_from_worker<T>(event_loop: Py<PyAny>, future: Py<PyAny>, result: Result<T>)
where
    T: for<'a> IntoPyObject<'a>,
{
    ATTACHED.fetch_add(1, Ordering::SeqCst);
    if SHUTTING_DOWN.load(Ordering::SeqCst) {
        // The interpreter is going away and nobody awaits this any more.
        std::mem::forget((event_loop, future));
    } else {
        Python::attach(|py| {
            let (ok, value) = match result.map_err(to_py).and_then(|v| v.into_py_any(py)) {
                Ok(value) => (true, value),
                Err(err) => (false, err.into_value(py).into_any()),
            };
            let settle = SETTLE.get_or_try_init(py, || {
                wrap_pyfunction!(settle, py).map(|f| f.into_any().unbind())
            });
            if let Ok(settle) = settle {
                // Fails only when the loop is closed: then nobody is waiting.
                let _ = event_loop
                    .bind(py)
                    .call_method1("call_soon_threadsafe", (settle, future, ok, value));
            }
        });
    }
    ATTACHED.fetch_sub(1, Ordering::SeqCst);
}

static SETTLE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Runs on the event loop: completes the future unless it was cancelled.
#[pyfunction]
fn settle(future: &Bound<'_, PyAny>, ok: bool, value: Bound<'_, PyAny>) -> PyResult<()> {
    if future.call_method0("done")?.is_truthy()? {
        return Ok(());
    }
    if ok {
        future.call_method1("set_result", (value,))?;
    } else {
        future.call_method1("set_exception", (value,))?;
    }
    Ok(())
}

/// Registered with `atexit`: bars workers from attaching to a finalising
/// interpreter and waits for those already attached.
#[pyfunction]
pub fn _shutdown(py: Python<'_>) {
    SHUTTING_DOWN.store(true, Ordering::SeqCst);
    py.detach(|| {
        while ATTACHED.load(Ordering::SeqCst) > 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
}
