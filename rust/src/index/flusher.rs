//! The background thread that commits the tail to the on-disk index.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use super::SearchIndex;

#[derive(Default)]
struct Signal {
    stop: bool,
    urgent: bool,
}

pub struct Flusher {
    signal: Arc<(Mutex<Signal>, Condvar)>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Flusher {
    /// Commits whatever is pending every `every`, or sooner when nudged.
    pub fn start(index: Arc<SearchIndex>, every: Duration) -> std::io::Result<Self> {
        let signal: Arc<(Mutex<Signal>, Condvar)> = Arc::default();
        let shared = Arc::clone(&signal);
        let thread = std::thread::Builder::new().name("contextforge-flush".into()).spawn(move || {
            let (lock, wake) = &*shared;
            loop {
                let stop = {
                    let mut state = lock.lock();
                    if !state.stop && !state.urgent {
                        wake.wait_for(&mut state, every);
                    }
                    state.urgent = false;
                    state.stop
                };
                if stop {
                    break;
                }
                if index.pending() > 0 {
                    if let Err(err) = index.flush_if_checked() {
                        // The tail still holds the changes; the next round retries.
                        log::error!("search index commit failed: {err}");
                    }
                }
            }
        })?;
        Ok(Self { signal, thread: Mutex::new(Some(thread)) })
    }

    /// Asks for a commit now rather than at the next tick.
    pub fn nudge(&self) {
        let (lock, wake) = &*self.signal;
        lock.lock().urgent = true;
        wake.notify_one();
    }

    /// Stops the thread and waits for it; idempotent.
    pub fn stop(&self) {
        let (lock, wake) = &*self.signal;
        lock.lock().stop = true;
        wake.notify_one();
        if let Some(thread) = self.thread.lock().take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Flusher {
    fn drop(&mut self) {
        self.stop();
    }
}
