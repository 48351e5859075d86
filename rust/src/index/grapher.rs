//! The background thread that builds the vector graph (`vectors.rs`).

use std::sync::Arc;
use std::time::Duration;

use super::worker::Worker;
use super::SearchIndex;

/// How long the thread rests after a failed step before it tries again.
const AFTER_FAILURE: Duration = Duration::from_secs(5);
/// How often it looks for work nobody nudged it for (changes other
/// processes made, followed by a query).
const TICK: Duration = Duration::from_secs(1);

pub struct Grapher(Worker);

impl Grapher {
    /// Builds `index`'s graph whenever nudged, step by step until nothing is
    /// left, on up to `threads` threads.
    pub fn start(index: Arc<SearchIndex>, threads: usize) -> std::io::Result<Self> {
        let mut first = true;
        let worker = Worker::start("contextforge-graph", TICK, move |nudged| {
            if std::mem::take(&mut first) {
                yield_to_writes();
            }
            if !nudged && index.graph_backlog() == 0 {
                return None;
            }
            match index.graph_step(threads, super::vectors::BACKGROUND_BATCH) {
                Ok(0) => None,
                Ok(_) => Some(Duration::ZERO),
                Err(err) => {
                    log::error!("building the vector graph failed: {err}");
                    Some(AFTER_FAILURE)
                }
            }
        })?;
        // Whatever the store held at open.
        worker.nudge();
        Ok(Self(worker))
    }

    /// Asks for the graph to take in what changed.
    pub fn nudge(&self) {
        self.0.nudge();
    }

    /// Stops the thread (after the step it is in) and waits for it; idempotent.
    pub fn stop(&self) {
        self.0.stop();
    }
}

/// Runs this thread at a lower priority (nice 10), so that building the graph
/// takes the cores saves and queries leave idle: a vector the graph lacks is
/// scanned meanwhile, so its build can wait, a save cannot.
fn yield_to_writes() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: plain system calls on this thread's own id.
        let result = unsafe {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            libc::setpriority(libc::PRIO_PROCESS, tid, 10)
        };
        if result != 0 {
            log::debug!("cannot lower the graph builder's priority: {}", std::io::Error::last_os_error());
        }
    }
}
