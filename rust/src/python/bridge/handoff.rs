//! Starting a call on a worker, and the `Handoff` where the worker leaves its result for an awaiter that
//! may be waiting awake for it.
//!
//! A `Handoff` is `Running` until the first of two things happens: the worker offers its result (`Done`:
//! the awaiter takes it), or the awaiter stops waiting (`Left`: the worker delivers the result to the
//! loop's inbox instead). Exactly one of them ends up with the result.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use pyo3::prelude::*;

use super::inbox::Inbox;
use super::outcome::Outcome;
use super::workers;

/// The longest a task waits awake for a result.
const SPIN: Duration = Duration::from_micros(500);

/// A `Handoff`'s states (in an `AtomicU8`).
#[repr(u8)]
#[derive(Clone, Copy)]
enum State {
    Running = 0,
    /// The worker left the result here.
    Done = 1,
    /// The awaiter stopped waiting: the worker delivers through the loop.
    Left = 2,
}

/// Where a worker leaves a result for an awaiter that may be waiting for it.
pub struct Handoff {
    state: AtomicU8,
    outcome: Mutex<Option<Outcome>>,
}

impl Handoff {
    pub fn new() -> Self {
        Self { state: AtomicU8::new(State::Running as u8), outcome: Mutex::new(None) }
    }

    /// Moves from `Running` to `to`; false when the other side moved first.
    fn advance(&self, to: State) -> bool {
        let running = State::Running as u8;
        self.state.compare_exchange(running, to as u8, Ordering::AcqRel, Ordering::Acquire).is_ok()
    }

    /// From the worker: leaves `outcome` for the awaiter, or gives it back when the awaiter has left
    /// (then it goes through the loop).
    pub fn offer(&self, outcome: Outcome) -> Option<Outcome> {
        *self.outcome.lock() = Some(outcome);
        if self.advance(State::Done) {
            None
        } else {
            self.outcome.lock().take()
        }
    }

    /// Waits awake, yielding the CPU on every turn, for up to `SPIN`; the outcome if it came, else
    /// leaves. A waiter that held its core instead would starve the very worker it waits for when other
    /// processes keep every core busy (`benchmarks/processes.py`).
    pub fn wait(&self) -> Option<Outcome> {
        let until = Instant::now() + SPIN;
        while self.state.load(Ordering::Acquire) == State::Running as u8 && Instant::now() < until {
            std::thread::yield_now();
        }
        self.leave()
    }

    /// Stops waiting; the outcome if it has come.
    pub fn leave(&self) -> Option<Outcome> {
        if self.advance(State::Left) {
            None
        } else {
            self.outcome.lock().take()
        }
    }
}

/// Runs `job` on a worker; its outcome goes to `handoff` when given, or else into the inbox for the loop
/// to settle `target` with.
pub fn start(
    inbox: &Arc<Inbox>,
    handoff: Option<&Arc<Handoff>>,
    target: Py<PyAny>,
    job: impl FnOnce() -> Outcome + Send + 'static,
) {
    inbox.started();
    let (handoff, inbox) = (handoff.map(Arc::clone), Arc::clone(inbox));
    workers::spawn(move || {
        let outcome = job();
        let outcome = match &handoff {
            Some(handoff) => handoff.offer(outcome),
            None => Some(outcome),
        };
        if let Some(outcome) = outcome {
            inbox.deliver(target, outcome);
        }
    });
}
