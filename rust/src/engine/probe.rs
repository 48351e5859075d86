//! What a query on a server learns of the change log's head: read with the
//! first entries it fetches, or, when the entries it packs are all cached
//! beside the index, read in the background while it ranks and packs.
//!
//! The query then answers as of the moment the head was read: if the head is
//! no further than what the index had applied when the query began, nothing
//! was missed; otherwise the index catches up and the query answers again.

use std::cell::{Cell, RefCell};

use crate::store::PendingHead;

#[derive(Default)]
pub(super) struct Probe {
    head: Cell<Option<i64>>,
    pending: RefCell<Option<PendingHead>>,
}

impl Probe {
    /// Whether a fetch should still read the head with its entries: none was
    /// read, and none is being read in the background.
    pub fn wants_head(&self) -> bool {
        self.head.get().is_none() && self.pending.borrow().is_none()
    }

    /// The head, read with entries.
    pub fn set(&self, head: i64) {
        self.head.set(Some(head));
    }

    /// Reads the head in the background, unless it is read already.
    pub fn start(&self, start: impl FnOnce() -> Option<PendingHead>) {
        if self.wants_head() {
            let started = start();
            *self.pending.borrow_mut() = started;
        }
    }

    /// The head the query read: with its entries, or in the background (waited
    /// for now). `None` when it read none, or the background read failed.
    pub fn finish(&self) -> Option<i64> {
        let pending = self.pending.borrow_mut().take();
        match (self.head.get(), pending) {
            (Some(head), _) => Some(head),
            (None, Some(pending)) => match pending.wait() {
                Ok(head) => Some(head),
                Err(err) => {
                    log::debug!("reading the change log's head in the background failed: {err}");
                    None
                }
            },
            (None, None) => None,
        }
    }
}
