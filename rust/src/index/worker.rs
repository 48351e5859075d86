//! A background thread that runs rounds of work when nudged or when a wait
//! runs out, until stopped (the flusher and the graph builder).

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

#[derive(Default)]
struct Signal {
    stop: bool,
    nudged: bool,
}

pub struct Worker {
    signal: Arc<(Mutex<Signal>, Condvar)>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Worker {
    /// Starts thread `name`: it runs `round(nudged)` after each wait, which
    /// lasts `every` or until a nudge; a round may return the next wait
    /// instead (zero: more work now).
    pub fn start(
        name: &str,
        every: Duration,
        mut round: impl FnMut(bool) -> Option<Duration> + Send + 'static,
    ) -> std::io::Result<Self> {
        let signal: Arc<(Mutex<Signal>, Condvar)> = Arc::default();
        let shared = Arc::clone(&signal);
        let thread = std::thread::Builder::new().name(name.into()).spawn(move || {
            let (lock, wake) = &*shared;
            let mut wait = every;
            loop {
                let nudged = {
                    let mut state = lock.lock();
                    if !state.stop && !state.nudged && !wait.is_zero() {
                        wake.wait_for(&mut state, wait);
                    }
                    if state.stop {
                        break;
                    }
                    std::mem::take(&mut state.nudged)
                };
                wait = round(nudged).unwrap_or(every);
            }
        })?;
        Ok(Self { signal, thread: Mutex::new(Some(thread)) })
    }

    /// Asks for a round now rather than when the wait runs out.
    pub fn nudge(&self) {
        let (lock, wake) = &*self.signal;
        lock.lock().nudged = true;
        wake.notify_one();
    }

    /// Stops the thread (after the round it is in) and waits for it; idempotent.
    pub fn stop(&self) {
        let (lock, wake) = &*self.signal;
        lock.lock().stop = true;
        wake.notify_one();
        if let Some(thread) = self.thread.lock().take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.stop();
    }
}
