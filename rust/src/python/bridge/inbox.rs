//! Each event loop's inbox: results that workers finished, and the pipe that wakes the loop to settle them.
//!
//! A worker queues a result and writes one byte into the pipe, whose read end the loop watches
//! (`add_reader`); it never takes the GIL. On the loop's thread `Drain` reads the byte and settles every
//! queued result's future. The inbox also keeps the streak of calls answered without the loop getting
//! a turn (`held_too_long`).

use std::collections::HashMap;
use std::io::{PipeReader, PipeWriter, Read, Write};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use pyo3::intern;
use pyo3::prelude::*;

use super::outcome::{settle, Outcome};

/// Results waiting for one event loop, and the pipe that wakes it.
pub struct Inbox {
    queue: Mutex<Vec<(Py<PyAny>, Outcome)>>,
    /// Calls started on this loop whose result has not been taken yet.
    in_flight: AtomicUsize,
    /// Set while a wake-up byte is in the pipe, so there is at most one.
    signalled: AtomicBool,
    writer: Mutex<PipeWriter>,
    reader: Mutex<PipeReader>,
    /// Since when calls answered without suspending have held the loop's thread without the loop getting
    /// a turn; `None` once it has had one.
    held_since: Mutex<Option<Instant>>,
    /// Set while a `Turn` waits in the loop's ready queue.
    turn_pending: AtomicBool,
}

/// The longest calls answered without suspending hold the loop, between the loop's turns, before one
/// gives it a turn to poll I/O, run timers and other tasks.
const HOLD: Duration = Duration::from_millis(2);

impl Inbox {
    /// A call was started; its result will be taken from a `Handoff` or from this inbox.
    pub fn started(&self) {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
    }

    /// A call's result was taken.
    pub fn finished(&self) {
        self.in_flight.fetch_sub(1, Ordering::AcqRel);
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }

    /// Whether results wait for the loop to settle them.
    pub fn has_results(&self) -> bool {
        self.signalled.load(Ordering::Acquire) || !self.queue.lock().is_empty()
    }

    /// Whether our `Turn` waits in the loop's ready queue (it is not other work: the loop is still free
    /// for a call).
    pub fn turn_pending(&self) -> bool {
        self.turn_pending.load(Ordering::Acquire)
    }

    /// Notes a call answered without suspending since `began`; true once such calls have held the loop
    /// for `HOLD` since its last turn, so this one should give it a turn. The first call after a turn
    /// leaves a `Turn` in the loop's ready queue: the loop running it ends the streak.
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

    /// From a worker, without the GIL: queues the result for `future` and wakes the loop.
    pub fn deliver(&self, future: Py<PyAny>, outcome: Outcome) {
        self.queue.lock().push((future, outcome));
        if !self.signalled.swap(true, Ordering::AcqRel) {
            // One byte into an empty pipe never blocks. Failing means the loop and its pipe are gone:
            // nobody waits for this result.
            let _ = self.writer.lock().write_all(&[1]);
        }
    }

    /// On the loop's thread, when the pipe is readable: settles every result.
    fn drain(&self, py: Python<'_>) {
        let mut byte = [0u8; 8];
        let _ = self.reader.lock().read(&mut byte);
        // Cleared before taking the queue: a result queued after this takes a new wake-up, so none is
        // left behind.
        self.signalled.store(false, Ordering::Release);
        let ready = std::mem::take(&mut *self.queue.lock());
        for (future, outcome) in ready {
            self.finished();
            if let Err(err) = settle(future.bind(py), outcome(py)) {
                err.write_unraisable(py, None);
            }
        }
    }
}

/// Left in the loop's ready queue by a call answered without suspending; the loop running it means the
/// loop has had a turn.
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

/// Inboxes by event loop (its address); an entry is dropped, closing its pipe, when the loop is
/// garbage-collected.
static INBOXES: Mutex<Option<HashMap<usize, Arc<Inbox>>>> = Mutex::new(None);

/// The inbox of `event_loop`, set up on first use; `None` when the loop cannot watch a pipe (Windows'
/// proactor) or be finalised.
pub fn inbox(event_loop: &Bound<'_, PyAny>) -> Option<Arc<Inbox>> {
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
    // The entry must go when the loop does: another loop may later live at the same address. A loop
    // that cannot be watched or finalised uses the fallback.
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
