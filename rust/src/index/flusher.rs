//! The background thread that commits the tail to the on-disk index, and
//! indexes this process's bulk saves after they return (`SearchIndex::defer`).

use std::sync::Arc;
use std::time::Duration;

use super::worker::Worker;
use super::SearchIndex;

pub struct Flusher(Worker);

impl Flusher {
    /// Commits whatever is pending every `every`, or sooner when nudged.
    pub fn start(index: Arc<SearchIndex>, every: Duration) -> std::io::Result<Self> {
        let worker = Worker::start("contextforge-flush", every, move |_| {
            if index.has_deferred() {
                if let Err(err) = index.catch_up() {
                    // The log still holds the changes; the next query catches up.
                    log::error!("indexing a bulk save failed: {err}");
                }
            }
            // After the bulk is applied and searchable, so a query waits for
            // its commits and not for this.
            index.merge_pending();
            if index.pending() > 0 {
                if let Err(err) = index.flush_if_checked() {
                    // The tail still holds the changes; the next round retries.
                    log::error!("search index commit failed: {err}");
                }
            }
            None
        })?;
        Ok(Self(worker))
    }

    /// Asks for a round now rather than at the next tick: a commit, and any
    /// bulk save deferred.
    pub fn nudge(&self) {
        self.0.nudge();
    }

    /// Stops the thread and waits for it; idempotent.
    pub fn stop(&self) {
        self.0.stop();
    }
}
