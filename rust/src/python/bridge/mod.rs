//! The async bridge: how an engine call leaves the event loop and the GIL, and how its result comes back
//! to the task that awaits it.
//!
//! # Files
//!
//! Each file uses only those listed above it (no module cycles):
//!
//! - `asyncio`: the only use of asyncio's private internals (`loop._ready`,
//!   `future._asyncio_future_blocking`), with the Python versions it was tested on.
//! - `switch`: `CONTEXTFORGE_PLAIN_CALLS`, which shortcuts are on; read once, at import.
//! - `outcome`: `Wait`, `Answer`, the `Outcome` that turns a result into Python, and `settle`.
//! - `workers`: the `contextforge-worker` threads calls run on.
//! - `inbox`: each loop's inbox of finished results, and the pipe that wakes the loop.
//! - `fallback`: settling through `call_soon_threadsafe`, and the `atexit` hook.
//! - `handoff`: `start` (a call onto a worker) and the `Handoff` where a worker leaves a result.
//! - `pending`: `Pending`, the awaitable that may answer without suspending its task.
//! - `call`: the entry points `awaitable` (any call) and `quick` (a call that can often answer at once,
//!   given `Wait::Never`: a query, a context block), which pick the path.
//!
//! # The paths a call can take
//!
//! The engine work never runs with the GIL, and a worker never takes it (but on the fallback path).
//!
//! 1. **Inline** (`quick` calls only; shortcut `inline`). Nothing runs until the task first awaits the
//!    `Pending`. If the loop then has nothing else to run (its ready queue is empty and no result of ours
//!    waits in its inbox), the call runs right there on the loop's thread with `Wait::Never`. If it
//!    answers (`Answer::Ready`), the task continues without suspending. If it says `Answer::WouldWait`
//!    (it would wait for a lock, an index catch-up, the network), or the loop was busy, it starts on a
//!    worker with `Wait::Allowed` and goes on as an awaitable call.
//! 2. **Awake hand-off** (shortcut `awake`). A call started on a worker with a `Handoff`; its task awaits
//!    the `Pending`. If this is the loop's only call in flight, nothing else is ready and there is a
//!    second core, the loop's thread waits awake without the GIL, yielding its core on every turn, for a
//!    short while: a result that comes in time is taken from the `Handoff`, and the task continues
//!    without suspending. Otherwise the awaiter leaves the `Handoff` and the call goes on as 3.
//! 3. **Plain**. The worker queues the result in the loop's `Inbox` and writes one byte into its pipe.
//!    The task waits on the asyncio future; the loop, woken by the pipe, settles every queued result,
//!    and the task resumes. With `CONTEXTFORGE_PLAIN_CALLS=1` every call takes this path, and the call
//!    returns the bare asyncio future instead of a `Pending`.
//! 4. **Fallback**. A loop that cannot watch a pipe (Windows' proactor): the worker attaches to Python
//!    and settles the future through `call_soon_threadsafe`; the `atexit` hook `_shutdown` bars such
//!    attaches once the interpreter starts finalising and waits for those in progress.
//!
//! Calls answered without suspending (1 and 2) hold the loop. Once they have held it, across however
//! many calls and whatever Python ran between them, for a couple of milliseconds since its last turn,
//! the next one settles its future and suspends the task instead, so that the loop polls I/O and runs
//! timers and other tasks (`Inbox::held_too_long`, `Turn`).
//!
//! # The states
//!
//! - `Handoff`: `Running`, then either `Done` (the worker came first and left the result for the
//!   awaiter) or `Left` (the awaiter stopped waiting or never came; the worker delivers to the inbox).
//! - `Pending`: a `quick` job not yet started; then started, which is final: a second `__next__` means
//!   the loop resumed the task because the future is done.
//! - `Inbox`: `signalled` while a wake-up byte is in the pipe (at most one); `held_since` and
//!   `turn_pending` while answers without suspending hold the loop, until it runs our `Turn`.
//! - A worker (`workers`): running a call, then spinning for the next (one worker at most), then
//!   asleep, then ended after an idle while.
//!
//! A panic in engine code becomes an `InternalError` (`outcome::guarded`) instead of crossing into
//! Python.

mod asyncio;
mod call;
mod fallback;
mod handoff;
mod inbox;
mod outcome;
mod pending;
mod switch;
mod workers;

pub use call::{awaitable, awaitable_on, quick};
pub use fallback::_shutdown;
pub use outcome::{Answer, Wait};
pub use switch::{paths, Paths};

/// Reads `CONTEXTFORGE_PLAIN_CALLS`; called when the module is imported.
pub fn read_switch() {
    let _ = switch::paths();
}
