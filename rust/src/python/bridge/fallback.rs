//! The path for a loop that cannot watch a pipe (Windows' proactor): the worker attaches to Python and
//! settles the future through `call_soon_threadsafe`; and the `atexit` hook that keeps such workers off
//! a finalising interpreter.
//!
//! Every attach is counted; `_shutdown` bars new ones and waits for the count to drain. Without it, a
//! worker still attached when the interpreter starts finalising right after `asyncio.run` returns aborts
//! the process ("PyGILState_Release ... finalizing"), which is why the bridge does not use
//! pyo3-async-runtimes.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

use super::outcome::{settle, Outcome};

static ATTACHED: AtomicUsize = AtomicUsize::new(0);
static SHUTTING_DOWN: AtomicBool = AtomicBool::new(false);

/// On a worker: settles `future` with `outcome` through `call_soon_threadsafe`, attached to Python.
pub fn settle_from_worker(event_loop: Py<PyAny>, future: Py<PyAny>, outcome: Outcome) {
    ATTACHED.fetch_add(1, Ordering::SeqCst);
    if SHUTTING_DOWN.load(Ordering::SeqCst) {
        // The interpreter is going away and nobody awaits this any more.
        std::mem::forget((event_loop, future, outcome));
    } else {
        Python::attach(|py| {
            let (ok, value) = match outcome(py) {
                Ok(value) => (true, value),
                Err(err) => (false, err.into_value(py).into_any()),
            };
            let settle = SETTLE
                .get_or_try_init(py, || wrap_pyfunction!(settle_future, py).map(|f| f.into_any().unbind()));
            if let Ok(settle) = settle {
                // Fails only when the loop is closed: then nobody is waiting.
                let _ = event_loop.bind(py).call_method1("call_soon_threadsafe", (settle, future, ok, value));
            }
        });
    }
    ATTACHED.fetch_sub(1, Ordering::SeqCst);
}

static SETTLE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

#[pyfunction]
fn settle_future(future: &Bound<'_, PyAny>, ok: bool, value: Bound<'_, PyAny>) -> PyResult<()> {
    let result = if ok { Ok(value.unbind()) } else { Err(PyErr::from_value(value)) };
    settle(future, result)
}

/// Registered with `atexit`: bars fallback workers from attaching to a finalising interpreter and waits
/// for those already attached.
#[pyfunction]
pub fn _shutdown(py: Python<'_>) {
    SHUTTING_DOWN.store(true, Ordering::SeqCst);
    py.detach(|| {
        while ATTACHED.load(Ordering::SeqCst) > 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
}
