//! The awaitable an engine call returns: it may take its result straight from
//! the worker instead of through the event loop.
//!
//! Handing a result to a loop asleep in `epoll_wait` costs a wake-up: about
//! 35 µs on these virtual machines (the sleeping CPU was handed back to the
//! host), a third of a fast query. So when a task awaits a call while its loop
//! has nothing else ready to run and no other call of ours is in flight, it
//! waits awake, without the GIL, for up to `SPIN`: a result that comes in that
//! time is returned at once. Otherwise, or after `SPIN`, it waits on an
//! asyncio future like any other awaitable. The loop is held only when it had
//! nothing else ready; I/O it has not polled yet waits at most `SPIN`. A loop
//! that does not expose its ready queue (uvloop) always takes the future.
//!
//! The wait yields the CPU on every turn rather than spinning in place: when
//! other processes keep every core busy, a waiter that held its core would
//! starve the very worker it waits for (`benchmarks/processes.py`: two
//! processes querying one store reached 0.56x to 0.67x one process's throughput
//! with a busy spin, 1.9x with this).

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use pyo3::exceptions::PyStopIteration;
use pyo3::intern;
use pyo3::prelude::*;

use super::call::{Inbox, Outcome};

/// The longest a task waits awake for a result.
const SPIN: Duration = Duration::from_micros(500);

const RUNNING: u8 = 0;
const DONE: u8 = 1;
/// The awaiter stopped waiting: the worker delivers through the loop.
const LEFT: u8 = 2;

/// Where a worker leaves a result for an awaiter that may be waiting for it.
pub(super) struct Handoff {
    state: AtomicU8,
    outcome: Mutex<Option<Outcome>>,
}

impl Handoff {
    pub fn new() -> Self {
        Self { state: AtomicU8::new(RUNNING), outcome: Mutex::new(None) }
    }

    /// From the worker: leaves `outcome` for the awaiter, or gives it back
    /// when the awaiter has left (then it goes through the loop).
    pub fn offer(&self, outcome: Outcome) -> Option<Outcome> {
        *self.outcome.lock() = Some(outcome);
        match self.state.compare_exchange(RUNNING, DONE, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => None,
            Err(_) => self.outcome.lock().take(),
        }
    }

    /// Waits awake for up to `SPIN`; the outcome if it came, else leaves.
    fn wait(&self) -> Option<Outcome> {
        let until = Instant::now() + SPIN;
        while self.state.load(Ordering::Acquire) == RUNNING && Instant::now() < until {
            std::thread::yield_now();
        }
        self.leave()
    }

    /// Stops waiting; the outcome if it has come.
    fn leave(&self) -> Option<Outcome> {
        match self.state.compare_exchange(RUNNING, LEFT, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => None,
            Err(_) => self.outcome.lock().take(),
        }
    }
}

/// The Python references are options so that the garbage collector can
/// break a cycle through them (future -> task -> coroutine -> this).
#[pyclass(module = "contextforge._core")]
pub(super) struct Pending {
    future: Option<Py<PyAny>>,
    /// Needed only until the first step.
    event_loop: Option<Py<PyAny>>,
    handoff: Arc<Handoff>,
    inbox: Arc<Inbox>,
    started: bool,
}

impl Pending {
    pub fn new(future: Py<PyAny>, event_loop: Py<PyAny>, handoff: Arc<Handoff>, inbox: Arc<Inbox>) -> Self {
        Self { future: Some(future), event_loop: Some(event_loop), handoff, inbox, started: false }
    }

    /// Whether the loop has nothing but this call to wait for, and there is a
    /// second core for the worker while this thread waits.
    fn loop_is_idle(&self, py: Python<'_>) -> bool {
        crate::runtime::cores() > 1
            && self.inbox.in_flight() == 1
            && self.event_loop.as_ref().is_some_and(|event_loop| {
                event_loop
                    .bind(py)
                    .getattr(intern!(py, "_ready"))
                    .and_then(|ready| ready.len())
                    .is_ok_and(|n| n == 0)
            })
    }

    fn future<'py>(&self, py: Python<'py>) -> PyResult<&Bound<'py, PyAny>> {
        self.future
            .as_ref()
            .map(|f| f.bind(py))
            .ok_or_else(|| pyo3::exceptions::PyRuntimeError::new_err("the call's future was cleared"))
    }
}

#[pymethods]
impl Pending {
    fn __await__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if self.started {
            // Resumed by the loop: the future is done (or cancelled, which raises).
            let result = self.future(py)?.call_method0(intern!(py, "result"))?;
            return Err(PyStopIteration::new_err((result.unbind(),)));
        }
        self.started = true;
        let idle = self.loop_is_idle(py);
        self.event_loop = None;
        let direct = if idle {
            let handoff = Arc::clone(&self.handoff);
            py.detach(move || handoff.wait())
        } else {
            self.handoff.leave()
        };
        if let Some(outcome) = direct {
            self.inbox.finished();
            let (ok, value) = outcome(py);
            return Err(if ok {
                PyStopIteration::new_err((value,))
            } else {
                PyErr::from_value(value.into_bound(py))
            });
        }
        let future = self.future(py)?;
        future.setattr(intern!(py, "_asyncio_future_blocking"), true)?;
        Ok(future.clone().unbind())
    }

    fn __traverse__(&self, visit: pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        if let Some(future) = &self.future {
            visit.call(future)?;
        }
        if let Some(event_loop) = &self.event_loop {
            visit.call(event_loop)?;
        }
        Ok(())
    }

    fn __clear__(&mut self) {
        self.future = None;
        self.event_loop = None;
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        // Never awaited: the result, if it is here, is nobody's.
        if !self.started && self.handoff.leave().is_some() {
            self.inbox.finished();
        }
    }
}
