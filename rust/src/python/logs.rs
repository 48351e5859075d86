//! Hands the engine's `log` records to Python's `logging`, as the
//! `contextforge` logger's, so that events such as a search index rebuilt from
//! the database reach the application's handlers.
//!
//! The thread that logs never takes the GIL (workers and the engine's own
//! threads must not attach to Python, see `bridge`): records wait in a bounded
//! queue, and the next call that settles a result on the event loop's thread,
//! which holds the GIL anyway, passes them on (`bridge::outcome`).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};

use log::{Level, LevelFilter, Log, Metadata, Record};
use parking_lot::Mutex;
use pyo3::prelude::*;

/// Records kept while nothing passes them on; older ones are dropped first.
const KEPT: usize = 256;

static QUEUE: Mutex<VecDeque<(Level, String)>> = Mutex::new(VecDeque::new());
static WAITING: AtomicBool = AtomicBool::new(false);

struct Bridge;

static BRIDGE: Bridge = Bridge;

impl Log for Bridge {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        // This crate's records only: dependencies log their own internals.
        metadata.level() <= Level::Info && metadata.target().starts_with(env!("CARGO_CRATE_NAME"))
    }

    fn log(&self, record: &Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let mut queue = QUEUE.lock();
        if queue.len() == KEPT {
            queue.pop_front();
        }
        queue.push_back((record.level(), record.args().to_string()));
        WAITING.store(true, Ordering::Release);
    }

    fn flush(&self) {}
}

/// Makes this module the `log` crate's logger (at module import).
pub fn install() {
    if log::set_logger(&BRIDGE).is_ok() {
        log::set_max_level(LevelFilter::Info);
    }
}

/// Passes the waiting records to `logging.getLogger("contextforge")`.
pub fn forward(py: Python<'_>) {
    if !WAITING.swap(false, Ordering::AcqRel) {
        return;
    }
    let records = std::mem::take(&mut *QUEUE.lock());
    let logger =
        py.import("logging").and_then(|logging| logging.call_method1("getLogger", ("contextforge",)));
    let Ok(logger) = logger else { return };
    for (level, message) in records {
        let level = match level {
            Level::Error => 40,
            Level::Warn => 30,
            Level::Info => 20,
            Level::Debug | Level::Trace => 10,
        };
        if let Err(err) = logger.call_method1("log", (level, message)) {
            err.write_unraisable(py, None);
        }
    }
}
