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
//! A `call::quick` call does not start until it is first awaited. If the loop
//! then has nothing else to run and no result of ours waits for it, the call
//! runs right there, on the loop's thread without the GIL, if it can answer
//! without waiting; otherwise it goes to a worker as above. Two tasks querying
//! at once then keep both cores on queries, the loop's thread and one worker,
//! instead of three threads (the loop and two workers) taking turns on two
//! cores and paying a wake-up for every result.
//!
//! A call answered without suspending the task (either way above) holds the
//! loop. Once such calls have held it for `call::HOLD` since its last turn
//! (whatever Python ran between them), the next one settles its future and
//! yields it instead, so the loop polls I/O and runs timers and other tasks.
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

use super::call::{settle, start_quick, Inbox, Outcome, Quick};

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
    /// A `quick` call not started yet (in a mutex only because a pyclass must
    /// be `Sync`).
    quick: Mutex<Option<Quick>>,
    started: bool,
}

impl Pending {
    pub fn new(
        future: Py<PyAny>,
        event_loop: Py<PyAny>,
        handoff: Arc<Handoff>,
        inbox: Arc<Inbox>,
        quick: Option<Quick>,
    ) -> Self {
        Self { future: Some(future), event_loop: Some(event_loop), handoff, inbox, quick: Mutex::new(quick), started: false }
    }

    /// Whether the loop has nothing ready to run (not even a result of ours to
    /// settle), so a call may hold it.
    fn loop_is_free(&self, py: Python<'_>) -> bool {
        !self.inbox.has_results() && self.nothing_else_ready(py)
    }

    /// Whether the loop's ready queue holds nothing but, maybe, our `Turn`.
    fn nothing_else_ready(&self, py: Python<'_>) -> bool {
        let ours = usize::from(self.inbox.turn_pending());
        self.event_loop.as_ref().is_some_and(|event_loop| {
            event_loop
                .bind(py)
                .getattr(intern!(py, "_ready"))
                .and_then(|ready| ready.len())
                .is_ok_and(|n| n <= ours)
        })
    }

    /// Runs the `quick` call here when the loop is free and it can answer at
    /// once, and returns its outcome with when it began; otherwise starts it
    /// on a worker.
    fn run_quick(&mut self, py: Python<'_>, mut job: Quick) -> PyResult<Option<(Outcome, Instant)>> {
        if self.loop_is_free(py) {
            let began = Instant::now();
            if let Some(outcome) = py.detach(|| job(false)) {
                return Ok(Some((outcome, began)));
            }
        }
        let target = self.future(py)?.clone().unbind();
        start_quick(&self.inbox, &self.handoff, target, job);
        Ok(None)
    }

    /// Returns a call's outcome without suspending the task, unless calls
    /// answered that way have held the loop for `call::HOLD` since its last
    /// turn: then the future is settled with it and the loop gets a turn first.
    fn answer(&mut self, py: Python<'_>, outcome: Outcome, began: Instant) -> PyResult<Py<PyAny>> {
        let held_too_long = self
            .event_loop
            .as_ref()
            .is_none_or(|event_loop| self.inbox.held_too_long(event_loop.bind(py), began));
        let (ok, value) = outcome(py);
        if !held_too_long {
            return Err(if ok {
                PyStopIteration::new_err((value,))
            } else {
                PyErr::from_value(value.into_bound(py))
            });
        }
        settle(self.future(py)?, ok, value.into_bound(py))?;
        self.yield_future(py)
    }

    /// Gives the loop a turn: the task resumes when the future is done.
    fn yield_future(&mut self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.event_loop = None;
        let future = self.future(py)?;
        future.setattr(intern!(py, "_asyncio_future_blocking"), true)?;
        Ok(future.clone().unbind())
    }

    /// Whether the loop has nothing but this call to wait for, and there is a
    /// second core for the worker while this thread waits.
    fn loop_is_idle(&self, py: Python<'_>) -> bool {
        crate::runtime::cores() > 1 && self.inbox.in_flight() == 1 && self.nothing_else_ready(py)
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
        if let Some(job) = self.quick.get_mut().take() {
            if let Some((outcome, began)) = self.run_quick(py, job)? {
                return self.answer(py, outcome, began);
            }
        }
        let began = Instant::now();
        let direct = if self.loop_is_idle(py) {
            let handoff = Arc::clone(&self.handoff);
            py.detach(move || handoff.wait())
        } else {
            self.handoff.leave()
        };
        if let Some(outcome) = direct {
            self.inbox.finished();
            return self.answer(py, outcome, began);
        }
        self.yield_future(py)
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
