//! `Pending`, the awaitable a call returns when it may be answered without suspending the awaiting task:
//! run on the loop's own thread (`inline`), or taken straight from a worker by an awaiter waiting awake
//! (`awake`).

use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use pyo3::exceptions::{PyRuntimeError, PyStopIteration};
use pyo3::intern;
use pyo3::prelude::*;

use super::asyncio;
use super::handoff::{start, Handoff};
use super::inbox::Inbox;
use super::outcome::{answer_waiting, Answer, Outcome, Quick, Wait};
use super::switch::Paths;

/// The Python references are options so that the garbage collector can break a cycle through them
/// (future -> task -> coroutine -> this).
#[pyclass(module = "contextforge._core")]
pub struct Pending {
    future: Option<Py<PyAny>>,
    /// Needed only until the task first yields the future.
    event_loop: Option<Py<PyAny>>,
    handoff: Arc<Handoff>,
    inbox: Arc<Inbox>,
    /// A `quick` call not started yet (in a mutex only because a pyclass must be `Sync`).
    quick: Mutex<Option<Quick>>,
    started: bool,
    paths: Paths,
}

impl Pending {
    /// A call already started on a worker, with `handoff` (`handoff::start`).
    pub fn started(
        future: Py<PyAny>,
        event_loop: Py<PyAny>,
        handoff: Arc<Handoff>,
        inbox: Arc<Inbox>,
        paths: Paths,
    ) -> Self {
        Self::new(future, event_loop, handoff, inbox, None, paths)
    }

    /// A `quick` call, started when first awaited.
    pub fn quick(
        future: Py<PyAny>,
        event_loop: Py<PyAny>,
        inbox: Arc<Inbox>,
        job: Quick,
        paths: Paths,
    ) -> Self {
        Self::new(future, event_loop, Arc::new(Handoff::new()), inbox, Some(job), paths)
    }

    fn new(
        future: Py<PyAny>,
        event_loop: Py<PyAny>,
        handoff: Arc<Handoff>,
        inbox: Arc<Inbox>,
        quick: Option<Quick>,
        paths: Paths,
    ) -> Self {
        let (future, event_loop, quick) = (Some(future), Some(event_loop), Mutex::new(quick));
        Self { future, event_loop, handoff, inbox, quick, started: false, paths }
    }

    /// Whether the loop has nothing ready to run (not even a result of ours to settle), so a call may
    /// hold it.
    fn loop_is_free(&self, py: Python<'_>) -> bool {
        !self.inbox.has_results() && self.nothing_else_ready(py)
    }

    /// Whether the loop's ready queue holds nothing but, maybe, our `Turn`.
    fn nothing_else_ready(&self, py: Python<'_>) -> bool {
        let ours = usize::from(self.inbox.turn_pending());
        self.event_loop
            .as_ref()
            .and_then(|event_loop| asyncio::ready_callbacks(event_loop.bind(py)))
            .is_some_and(|n| n <= ours)
    }

    /// Whether the loop has nothing but this call to wait for, and there is a second core for the
    /// worker while this thread waits.
    fn loop_is_idle(&self, py: Python<'_>) -> bool {
        crate::runtime::cores() > 1 && self.inbox.in_flight() == 1 && self.nothing_else_ready(py)
    }

    /// Runs the `quick` call here when the loop is free and it can answer at once, and returns its
    /// outcome with when it began; otherwise starts it on a worker.
    fn run_quick(&mut self, py: Python<'_>, mut job: Quick) -> PyResult<Option<(Outcome, Instant)>> {
        if self.paths.inline && self.loop_is_free(py) {
            let began = Instant::now();
            if let Answer::Ready(outcome) = py.detach(|| job(Wait::Never)) {
                return Ok(Some((outcome, began)));
            }
        }
        let target = self.future(py)?.clone().unbind();
        start(&self.inbox, Some(&self.handoff), target, move || answer_waiting(&mut job));
        Ok(None)
    }

    /// Returns a call's outcome without suspending the task, unless calls answered that way have held
    /// the loop too long since its last turn (`Inbox::held_too_long`): then the future is settled with
    /// it and the loop gets a turn first.
    fn answer(&mut self, py: Python<'_>, outcome: Outcome, began: Instant) -> PyResult<Py<PyAny>> {
        let held_too_long = self
            .event_loop
            .as_ref()
            .is_none_or(|event_loop| self.inbox.held_too_long(event_loop.bind(py), began));
        let result = outcome(py);
        if !held_too_long {
            return Err(match result {
                Ok(value) => PyStopIteration::new_err((value,)),
                Err(err) => err,
            });
        }
        super::outcome::settle(self.future(py)?, result)?;
        self.yield_future(py)
    }

    /// Suspends the task: it resumes when the future is done.
    fn yield_future(&mut self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.event_loop = None;
        let future = self.future(py)?;
        asyncio::mark_blocking(future)?;
        Ok(future.clone().unbind())
    }

    fn future<'py>(&self, py: Python<'py>) -> PyResult<&Bound<'py, PyAny>> {
        self.future
            .as_ref()
            .map(|f| f.bind(py))
            .ok_or_else(|| PyRuntimeError::new_err("the call's future was cleared"))
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
        let direct = if self.paths.awake && self.loop_is_idle(py) {
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
