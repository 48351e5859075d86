//! The read audit (`Config::audit`): for every `query` and `context`, the time,
//! the scopes, a keyed hash of the text (the text too on request) and the ids
//! returned: what went into a prompt. Records wait in memory and are written
//! in batches on the runtime's blocking pool, so a query pays a push, never a
//! transaction; a crash loses at most the batch not yet written.

use std::sync::Arc;

use parking_lot::Mutex;

use super::{Memory, Query};
use crate::entry::{Hit, Micros};
use crate::error::Result;
use crate::store::{now_micros, Read, Store};

/// Records written per batch.
pub(super) const READS_BATCH: usize = 64;

const MICROS_PER_DAY: i64 = 86_400_000_000;

/// SipHash-1-3 of `text` under the store's 128-bit audit key (a keyed PRF):
/// equal queries give equal hashes in one store, and without the key no hash
/// can be matched against guessed texts, nor the key recovered from a text
/// whose hash is known.
fn keyed_hash((k0, k1): (u64, u64), text: &str) -> String {
    use std::hash::Hasher;
    let mut hasher = siphasher::sip::SipHasher13::new_with_keys(k0, k1);
    hasher.write(text.as_bytes());
    format!("{:016x}", hasher.finish())
}

/// The reads noted and not yet written, and how they are written.
pub(super) struct ReadLog {
    store: Arc<Store>,
    retention_days: u32,
    pending: Mutex<Vec<Read>>,
    /// Held while a batch is written: one write at a time, and a flush or a
    /// close waits for one under way before writing the rest.
    writing: Mutex<()>,
}

impl ReadLog {
    pub(super) fn new(store: Arc<Store>, retention_days: u32) -> Arc<Self> {
        Arc::new(ReadLog { store, retention_days, pending: Mutex::default(), writing: Mutex::new(()) })
    }

    /// Writes every noted read, and drops those older than the retention.
    pub(super) fn write(&self) -> Result<()> {
        let _one = self.writing.lock();
        let batch = std::mem::take(&mut *self.pending.lock());
        if batch.is_empty() {
            return Ok(());
        }
        let keep_after = now_micros() - i64::from(self.retention_days) * MICROS_PER_DAY;
        if let Err(err) = self.store.record_reads(&batch, keep_after) {
            let mut pending = self.pending.lock();
            let newer = std::mem::replace(&mut *pending, batch);
            pending.extend(newer);
            return Err(err);
        }
        Ok(())
    }
}

impl Memory {
    /// Notes what `query` returned, when the audit is on; a full batch is
    /// written on the blocking pool, off the query's path.
    pub(super) fn note_read(&self, query: &Query, hits: &[Hit], at: Micros) {
        if !self.config.audit.reads {
            return;
        }
        let read = Read {
            at,
            scopes: query.scopes.clone(),
            query_hash: keyed_hash(self.audit_key, &query.text),
            query: self.config.audit.query_text.then(|| query.text.clone()),
            ids: hits.iter().map(|h| h.entry.id).collect(),
        };
        let full = {
            let mut pending = self.reads.pending.lock();
            pending.push(read);
            pending.len() == READS_BATCH
        };
        if full {
            let log = Arc::clone(&self.reads);
            crate::runtime::runtime().spawn_blocking(move || {
                // A failure is logged and the reads wait for the next try (a
                // query does not fail for its audit).
                if let Err(err) = log.write() {
                    log::warn!("the read audit could not be written yet: {err}");
                }
            });
        }
    }

    /// Writes every noted read now (waiting for a batch under way).
    pub(super) fn write_reads(&self) -> Result<()> {
        self.reads.write()
    }

    /// Up to `limit` audited reads after `after`, oldest first, with their
    /// numbers (those still in memory are written first).
    pub fn reads(&self, after: i64, limit: usize) -> Result<Vec<(i64, Read)>> {
        self.check_open()?;
        self.write_reads()?;
        self.store.reads(after.max(0), limit.clamp(1, 10_000))
    }
}

#[cfg(test)]
mod tests {
    use super::keyed_hash;

    #[test]
    fn the_hash_is_keyed_and_stable() {
        assert_eq!(keyed_hash((1, 2), "deploy"), keyed_hash((1, 2), "deploy"));
        assert_ne!(keyed_hash((1, 2), "deploy"), keyed_hash((1, 3), "deploy"));
        assert_ne!(keyed_hash((1, 2), "deploy"), keyed_hash((3, 2), "deploy"));
        assert_ne!(keyed_hash((1, 2), "deploy"), keyed_hash((1, 2), "deploys"));
        assert_eq!(keyed_hash((0, 0), "").len(), 16);
    }
}
