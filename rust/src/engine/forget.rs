//! `forget`: entries removed from the database and from every file derived
//! from it, with a receipt (docs/forgetting.md).

use super::Memory;
use crate::entry::{normalize_key, validate_label, Micros};
use crate::error::Result;
use crate::index::Follow;
use crate::store::Forget;

/// What one `forget` removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    /// The forget's id, also in the change log's tombstones.
    pub id: String,
    pub at: Micros,
    /// The ids of the entries forgotten, in order.
    pub ids: Vec<i64>,
    /// Their vectors.
    pub vectors: usize,
    /// Entries kept whose index documents held forgotten words (the next
    /// turns of a forgotten entry's session), rewritten without them.
    pub reindexed: usize,
    /// Index segments rewritten to drop deleted documents.
    pub segments: usize,
    /// Whether the database's own storage no longer holds the forgotten bytes:
    /// a local file (secure_delete, the WAL truncated) or a store in memory.
    /// A libSQL server's files are the server's: sqld serves a client neither
    /// `secure_delete` nor a checkpoint, so its WAL, replication log and free
    /// pages may keep them (docs/forgetting.md, "Remote stores").
    pub storage_scrubbed: bool,
}

impl Memory {
    /// Deletes every entry `what` selects, and everything derived from them:
    /// index documents and terms, vectors, the WAL's old frames. The log keeps
    /// a tombstone per entry.
    pub fn forget(&self, mut what: Forget) -> Result<Receipt> {
        self.check_open()?;
        if let Some(Some(scope)) = &what.scope {
            validate_label("scope", scope)?;
        }
        if let Some(session) = &what.session_id {
            validate_label("session_id", session)?;
        }
        if let Some(key) = what.key.take() {
            validate_label("key", &key)?;
            what.key = Some(normalize_key(key));
        }
        let forgotten = self.store.forget(&what)?;
        self.index.follow(&self.store, Follow::Wait)?;
        let segments = self.index.purge()?;
        Ok(Receipt {
            id: forgotten.id,
            at: forgotten.at,
            ids: forgotten.deleted.iter().map(|&(id, _)| id).collect(),
            vectors: forgotten.vectors,
            reindexed: forgotten.reindexed,
            segments,
            storage_scrubbed: !self.store.is_remote(),
        })
    }
}
