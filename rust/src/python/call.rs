//! The one place engine work leaves the event loop and the GIL.
//!
//! A method creates an asyncio future on the running loop and runs the engine
//! closure on a worker thread (`workers`), without the GIL, and returns a
//! `handoff::Pending`: awaited while the loop has nothing else to run, it waits
//! awake for the result for a moment and takes it straight from the worker.
//! A `quick` call (a query or a context block) is started only when awaited, and then, if the loop
//! is free and the call can answer without waiting, runs on the loop's own
//! thread, still without the GIL (see `handoff`).
//! Otherwise the finished result goes into the loop's inbox, a queue beside a
//! pipe whose read end the loop watches (`add_reader`); the worker writes one
//! byte and never takes the GIL. On the loop's thread the inbox is drained:
//! results become Python objects and settle their futures. A panic becomes an
//! `InternalError` instead of crossing into Python.
//!
//! A worker that took the GIL to hand over its result would wait for the loop's
//! thread to release it (up to the interpreter's switch interval when that
//! thread runs Python code), and the hand-over through `call_soon_threadsafe`
//! costs a Python call per result. A loop that cannot watch a file descriptor
//! (Windows' proactor) falls back to `call_soon_threadsafe`.
//!
//! Why not pyo3-async-runtimes: its completion path can still hold a thread state
//! when the interpreter starts finalising right after `asyncio.run` returns, which
//! aborts the process ("PyGILState_Release ... finalizing"). Here workers never
//! attach, except on the fallback path, where every attach is counted and an
//! `atexit` hook waits for the count to drain and bars new ones.

use std::collections::HashMap;
use std::io::{PipeReader, PipeWriter, Read, Write};
use std::os::fd::AsRawFd;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::IntoPyObjectExt;

use super::errors::to_py;
use super::handoff::{Handoff, Pending};
use super::workers;
use crate::error::{Error, Result};

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

/// A finished call: turns its result into Python on the loop's thread.
pub(super) type Outcome = Box<dyn FnOnce(Python<'_>) -> (bool, Py<PyAny>) + Send>;

fn outcome<T>(result: Result<T>) -> Outcome
where
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    Box::new(move |py| {
        // Log records the call left (or anything else did) reach Python here.
        super::logs::forward(py);
        match result.map_err(to_py).and_then(|v| v.into_py_any(py)) {
            Ok(value) => (true, value),
            Err(err) => (false, err.into_value(py).into_any()),
        }
    })
}

/// A call that may run on the loop's own thread: given `false` it must not
/// wait, and says `None` when it would have to; given `true` it always answers.
pub(super) type Quick = Box<dyn FnMut(bool) -> Option<Outcome> + Send>;

/// Runs `f` on a worker thread and returns an awaitable of its result.
pub fn awaitable<'py, T, F>(py: Python<'py>, f: F) -> PyResult<Bound<'py, PyAny>>
where
    F: FnOnce() -> Result<T> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    let event_loop = running_loop(py)?;
    let future = event_loop.call_method0("create_future")?;
    let target = future.clone().unbind();
    match inbox(&event_loop) {
        Some(inbox) => {
            let handoff = Arc::new(Handoff::new());
            start(&inbox, &handoff, target, move || outcome(guarded(f)));
            let pending = Pending::new(future.unbind(), event_loop.unbind(), handoff, inbox, None);
            Ok(Bound::new(py, pending)?.into_any())
        }
        None => {
            let event_loop = event_loop.unbind();
            workers::spawn(move || settle_from_worker(event_loop, target, outcome(guarded(f))));
            Ok(future)
        }
    }
}

/// `awaitable` for a short call that can often answer at once: `f(false)`
/// must not wait (for a lock another thread holds, an index catch-up, the
/// network) and returns `None` when it would have to; `f(true)` always
/// answers. Nothing runs until the awaitable is first awaited: then, if the
/// loop has nothing else to run, `f(false)` runs right there on the loop's
/// thread, without the GIL (`handoff::Pending`), and otherwise `f(true)` runs
/// on a worker.
pub fn quick<'py, T, F>(py: Python<'py>, mut f: F) -> PyResult<Bound<'py, PyAny>>
where
    F: FnMut(bool) -> Option<Result<T>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    let event_loop = running_loop(py)?;
    let future = event_loop.call_method0("create_future")?;
    match inbox(&event_loop) {
        Some(inbox) => {
            let job: Quick = Box::new(move |may_wait| {
                guarded(|| f(may_wait).transpose()).transpose().map(outcome)
            });
            let handoff = Arc::new(Handoff::new());
            let pending = Pending::new(future.unbind(), event_loop.unbind(), handoff, inbox, Some(job));
            Ok(Bound::new(py, pending)?.into_any())
        }
        None => {
            let (event_loop, target) = (event_loop.unbind(), future.clone().unbind());
            workers::spawn(move || {
                let result = guarded(|| f(true).transpose()).transpose().unwrap_or_else(|| Err(unanswered()));
                settle_from_worker(event_loop, target, outcome(result));
            });
            Ok(future)
        }
    }
}

fn running_loop<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
    static GET_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let get_loop = GET_LOOP.get_or_try_init(py, || {
        py.import("asyncio")?.getattr("get_running_loop").map(Bound::unbind)
    })?;
    get_loop.bind(py).call0()
}

/// Runs `job` on a worker; its outcome goes to `handoff`, or else into the inbox
/// for the loop to settle `target` with.
pub(super) fn start(
    inbox: &Arc<Inbox>,
    handoff: &Arc<Handoff>,
    target: Py<PyAny>,
    job: impl FnOnce() -> Outcome + Send + 'static,
) {
    inbox.in_flight.fetch_add(1, Ordering::AcqRel);
    let (handoff, inbox) = (Arc::clone(handoff), Arc::clone(inbox));
    workers::spawn(move || {
        if let Some(outcome) = handoff.offer(job()) {
            inbox.deliver(target, outcome);
        }
    });
}

/// Runs a `Quick` call on a worker, where it may wait.
pub(super) fn start_quick(inbox: &Arc<Inbox>, handoff: &Arc<Handoff>, target: Py<PyAny>, mut job: Quick) {
    start(inbox, handoff, target, move || job(true).unwrap_or_else(|| outcome::<()>(Err(unanswered()))));
}

/// A `quick` call broke its promise to answer when allowed to wait.
fn unanswered() -> Error {
    Error::Internal("a call allowed to wait did not answer".into())
}

/// Results waiting for one event loop, and the pipe that wakes it.
pub(super) struct Inbox {
    queue: Mutex<Vec<(Py<PyAny>, Outcome)>>,
    /// Calls started on this loop whose result has not been taken yet.
    in_flight: AtomicUsize,
    /// Set while a wake-up byte is in the pipe, so there is at most one.
    signalled: AtomicBool,
    writer: Mutex<PipeWriter>,
    reader: Mutex<PipeReader>,
    /// Since when calls run on the loop's thread have held it without the loop
    /// getting a turn; `None` once it has had one.
    held_since: Mutex<Option<Instant>>,
    /// Set while a `Turn` waits in the loop's ready queue.
    turn_pending: AtomicBool,
}

/// The longest calls run on the loop's thread hold it, between the loop's
/// turns, before one gives it a turn to poll I/O, run timers and other tasks.
const HOLD: Duration = Duration::from_millis(2);

impl Inbox {
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }

    /// Whether results wait for the loop to settle them.
    pub fn has_results(&self) -> bool {
        self.signalled.load(Ordering::Acquire) || !self.queue.lock().is_empty()
    }

    /// Whether our `Turn` waits in the loop's ready queue (it is not other
    /// work: the loop is still free for a call).
    pub fn turn_pending(&self) -> bool {
        self.turn_pending.load(Ordering::Acquire)
    }

    /// Notes a call that ran on the loop's thread since `began`; true once such
    /// calls have held the loop for `HOLD` since its last turn, so this one
    /// should give it a turn. The first call after a turn leaves a `Turn` in the
    /// loop's ready queue: the loop running it ends the streak.
    pub fn held_too_long(self: &Arc<Self>, event_loop: &Bound<'_, PyAny>, began: Instant) -> bool {
        let since = *self.held_since.lock().get_or_insert(began);
        if !self.turn_pending.swap(true, Ordering::AcqRel) {
            let py = event_loop.py();
            let queued = Py::new(py, Turn { inbox: Arc::clone(self) })
                .and_then(|turn| event_loop.call_method1(intern!(py, "call_soon"), (turn,)));
            if queued.is_err() {
                // The loop is closing: give it the turn now.
                self.turned();
                return true;
            }
        }
        since.elapsed() >= HOLD
    }

    /// The loop has had a turn.
    fn turned(&self) {
        *self.held_since.lock() = None;
        self.turn_pending.store(false, Ordering::Release);
    }

    /// A call's result was taken.
    pub fn finished(&self) {
        self.in_flight.fetch_sub(1, Ordering::AcqRel);
    }

    /// From a worker, without the GIL.
    fn deliver(&self, future: Py<PyAny>, outcome: Outcome) {
        self.queue.lock().push((future, outcome));
        if !self.signalled.swap(true, Ordering::AcqRel) {
            // One byte into an empty pipe never blocks. Failing means the loop
            // and its pipe are gone: nobody waits for this result.
            let _ = self.writer.lock().write_all(&[1]);
        }
    }

    /// On the loop's thread, when the pipe is readable: settles every result.
    fn drain(&self, py: Python<'_>) {
        let mut byte = [0u8; 8];
        let _ = self.reader.lock().read(&mut byte);
        // Cleared before taking the queue: a result queued after this takes a
        // new wake-up, so none is left behind.
        self.signalled.store(false, Ordering::Release);
        let ready = std::mem::take(&mut *self.queue.lock());
        for (future, outcome) in ready {
            self.finished();
            let (ok, value) = outcome(py);
            if let Err(err) = settle(future.bind(py), ok, value.into_bound(py)) {
                err.write_unraisable(py, None);
            }
        }
    }
}

/// Left in the loop's ready queue by a call that ran on the loop's thread; the
/// loop running it means the loop has had a turn.
#[pyclass(frozen)]
struct Turn {
    inbox: Arc<Inbox>,
}

#[pymethods]
impl Turn {
    fn __call__(&self) {
        self.inbox.turned();
    }
}

/// The loop's watcher: called by asyncio when the inbox's pipe is readable.
#[pyclass(frozen)]
struct Drain {
    inbox: Arc<Inbox>,
}

#[pymethods]
impl Drain {
    fn __call__(&self, py: Python<'_>) {
        self.inbox.drain(py);
    }
}

/// Inboxes by event loop (its address); an entry is dropped, closing its pipe,
/// when the loop is garbage-collected.
static INBOXES: Mutex<Option<HashMap<usize, Arc<Inbox>>>> = Mutex::new(None);

/// The inbox of `event_loop`, set up on first use; `None` when the loop cannot
/// watch a pipe.
fn inbox(event_loop: &Bound<'_, PyAny>) -> Option<Arc<Inbox>> {
    let key = event_loop.as_ptr() as usize;
    if let Some(inbox) = INBOXES.lock().get_or_insert_with(HashMap::new).get(&key) {
        return Some(Arc::clone(inbox));
    }
    let (reader, writer) = std::io::pipe().ok()?;
    let fd = reader.as_raw_fd();
    let inbox = Arc::new(Inbox {
        queue: Mutex::new(Vec::new()),
        in_flight: AtomicUsize::new(0),
        signalled: AtomicBool::new(false),
        writer: Mutex::new(writer),
        reader: Mutex::new(reader),
        held_since: Mutex::new(None),
        turn_pending: AtomicBool::new(false),
    });
    let py = event_loop.py();
    // The entry must go when the loop does: another loop may later live at the
    // same address. A loop that cannot be watched or finalised uses the fallback.
    let forget = wrap_pyfunction!(forget_loop, py).ok()?;
    let finalize = py.import("weakref").and_then(|w| w.getattr("finalize")).ok()?;
    let drain = Py::new(py, Drain { inbox: Arc::clone(&inbox) }).ok()?;
    event_loop.call_method1("add_reader", (fd, drain)).ok()?;
    if let Err(err) = finalize.call1((event_loop, forget, key)) {
        log::debug!("event loop without a finaliser: {err}");
        let _ = event_loop.call_method1("remove_reader", (fd,));
        return None;
    }
    INBOXES.lock().get_or_insert_with(HashMap::new).insert(key, Arc::clone(&inbox));
    Some(inbox)
}

/// Runs when an event loop is garbage-collected: drops its inbox and pipe.
#[pyfunction]
fn forget_loop(key: usize) {
    let inbox = INBOXES.lock().as_mut().and_then(|m| m.remove(&key));
    drop(inbox);
}

/// The fallback: settles through `call_soon_threadsafe`, attached to Python.
fn settle_from_worker(event_loop: Py<PyAny>, future: Py<PyAny>, outcome: Outcome) {
    ATTACHED.fetch_add(1, Ordering::SeqCst);
    if SHUTTING_DOWN.load(Ordering::SeqCst) {
        // The interpreter is going away and nobody awaits this any more.
        std::mem::forget((event_loop, future, outcome));
    } else {
        Python::attach(|py| {
            let (ok, value) = outcome(py);
            let settle = SETTLE.get_or_try_init(py, || {
                wrap_pyfunction!(settle_future, py).map(|f| f.into_any().unbind())
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

#[pyfunction]
fn settle_future(future: &Bound<'_, PyAny>, ok: bool, value: Bound<'_, PyAny>) -> PyResult<()> {
    settle(future, ok, value)
}

/// Completes the future unless it was cancelled.
pub(super) fn settle(future: &Bound<'_, PyAny>, ok: bool, value: Bound<'_, PyAny>) -> PyResult<()> {
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

/// Registered with `atexit`: bars fallback workers from attaching to a
/// finalising interpreter and waits for those already attached.
#[pyfunction]
pub fn _shutdown(py: Python<'_>) {
    SHUTTING_DOWN.store(true, Ordering::SeqCst);
    py.detach(|| {
        while ATTACHED.load(Ordering::SeqCst) > 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
}
