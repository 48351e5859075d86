//! The one file that touches asyncio's private internals, so that a new Python version breaks one place.
//!
//! Tested on CPython 3.11.7 (the extension is built for abi3, Python 3.10 and later). Two names are
//! read or written:
//!
//! - `loop._ready`, the deque of callbacks a `BaseEventLoop` runs on its next turn: its length tells
//!   whether the loop has other work. A loop without it (uvloop) never counts as free, and its calls
//!   always take the plain path.
//! - `future._asyncio_future_blocking`, the flag a `Task` checks on what a coroutine yields (as
//!   `Future.__await__` sets it before yielding itself): set on a future yielded from `Pending.__next__`
//!   so the task waits for it.
//!
//! `CONTEXTFORGE_PLAIN_CALLS=1` (see `switch`) stops every use of them.

use pyo3::intern;
use pyo3::prelude::*;

/// How many callbacks wait in the loop's ready queue; `None` when the loop does not say.
pub fn ready_callbacks(event_loop: &Bound<'_, PyAny>) -> Option<usize> {
    let py = event_loop.py();
    event_loop.getattr(intern!(py, "_ready")).and_then(|ready| ready.len()).ok()
}

/// Marks `future`, about to be yielded to the task awaiting it, as one the task must wait for.
pub fn mark_blocking(future: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = future.py();
    future.setattr(intern!(py, "_asyncio_future_blocking"), true)
}
