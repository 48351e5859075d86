//! The read audit (`Config::audit`): for every `query` and `context`, the time,
//! the scopes, a keyed hash of the text (the text too on request) and the ids
//! returned: what went into a prompt. Records wait in memory and are written
//! in batches, so a query pays a push, not a transaction; a crash loses at most
//! the batch not yet written.

use super::{Memory, Query};
use crate::entry::{Hit, Micros};
use crate::error::Result;
use crate::store::{now_micros, Read};

/// Records written per batch.
pub(super) const READS_BATCH: usize = 64;

const MICROS_PER_DAY: i64 = 86_400_000_000;

/// A keyed 64-bit FNV-1a of `text`: equal queries give equal hashes in one
/// store, and the hash says nothing outside it.
fn keyed_hash(key: u64, text: &str) -> String {
    let h = text
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325 ^ key, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    format!("{h:016x}")
}

impl Memory {
    /// Notes what `query` returned, when the audit is on.
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
        self.reads.lock().push(read);
    }

    /// Writes a full batch of noted reads; a failure is logged and the reads
    /// wait for the next try (a query does not fail for its audit).
    pub(super) fn write_reads_if_full(&self) {
        if self.reads.lock().len() >= READS_BATCH {
            if let Err(err) = self.write_reads() {
                log::warn!("the read audit could not be written yet: {err}");
            }
        }
    }

    /// Writes every noted read, and drops those older than the retention.
    pub(super) fn write_reads(&self) -> Result<()> {
        let batch = std::mem::take(&mut *self.reads.lock());
        if batch.is_empty() {
            return Ok(());
        }
        let keep_after = now_micros() - i64::from(self.config.audit.retention_days) * MICROS_PER_DAY;
        if let Err(err) = self.store.record_reads(&batch, keep_after) {
            let mut pending = self.reads.lock();
            let newer = std::mem::replace(&mut *pending, batch);
            pending.extend(newer);
            return Err(err);
        }
        Ok(())
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
        assert_eq!(keyed_hash(1, "deploy"), keyed_hash(1, "deploy"));
        assert_ne!(keyed_hash(1, "deploy"), keyed_hash(2, "deploy"));
        assert_ne!(keyed_hash(1, "deploy"), keyed_hash(1, "deploys"));
        assert_eq!(keyed_hash(0, "").len(), 16);
    }
}
