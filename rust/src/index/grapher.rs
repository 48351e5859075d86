//! The background thread that builds the vector graph (`vectors.rs`).

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use super::SearchIndex;

/// How long the thread rests after a failed step before it tries again.
const AFTER_FAILURE: Duration = Duration::from_secs(5);
/// How often it looks for work nobody nudged it for (changes other
/// processes made, followed by a query).
const TICK: Duration = Duration::from_secs(1);

#[derive(Default)]
struct Signal {
    stop: bool,
    work: bool,
}

pub struct Grapher {
    signal: Arc<(Mutex<Signal>, Condvar)>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Grapher {
    /// Builds `index`'s graph whenever nudged, step by step until nothing is
    /// left, on up to `threads` threads.
    pub fn start(index: Arc<SearchIndex>, threads: usize) -> std::io::Result<Self> {
        let signal: Arc<(Mutex<Signal>, Condvar)> =
            Arc::new((Mutex::new(Signal { stop: false, work: true }), Condvar::new()));
        let shared = Arc::clone(&signal);
        let thread = std::thread::Builder::new().name("contextforge-graph".into()).spawn(move || {
            yield_to_writes();
            let (lock, wake) = &*shared;
            let mut rest = None;
            loop {
                {
                    let mut state = lock.lock();
                    if let Some(rest) = rest.take() {
                        wake.wait_for(&mut state, rest);
                    }
                    if !state.stop && !state.work {
                        wake.wait_for(&mut state, TICK);
                    }
                    if state.stop {
                        break;
                    }
                    if !std::mem::take(&mut state.work) && index.graph_backlog() == 0 {
                        continue;
                    }
                }
                match index.graph_step(threads) {
                    Ok(0) => {}
                    Ok(_) => lock.lock().work = true,
                    Err(err) => {
                        log::error!("building the vector graph failed: {err}");
                        lock.lock().work = true;
                        rest = Some(AFTER_FAILURE);
                    }
                }
            }
        })?;
        Ok(Self { signal, thread: Mutex::new(Some(thread)) })
    }

    /// Asks for the graph to take in what changed.
    pub fn nudge(&self) {
        let (lock, wake) = &*self.signal;
        lock.lock().work = true;
        wake.notify_one();
    }

    /// Stops the thread (after the step it is in) and waits for it; idempotent.
    pub fn stop(&self) {
        let (lock, wake) = &*self.signal;
        lock.lock().stop = true;
        wake.notify_one();
        if let Some(thread) = self.thread.lock().take() {
            let _ = thread.join();
        }
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

impl Drop for Grapher {
    fn drop(&mut self) {
        self.stop();
    }
}
