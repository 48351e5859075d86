//! When a save is a duplicate of an entry already stored: the one rule that
//! single saves and grouped bulk saves share.
//!
//! A new entry is a duplicate of a stored one only when nothing the caller
//! could tell apart differs, and keeping the stored one loses nothing:
//! - the normalised content is equal;
//! - the scope, session, kind, key and metadata are equal (metadata as JSON values:
//!   key order does not matter, and no metadata equals `{}`);
//! - the new entry gives no end of its own (`valid_to`); for a plain save,
//!   the stored entry still holds (it was not superseded, its interval has not
//!   ended); a keyed save compares with the version it would supersede
//!   (`timeline.rs`);
//! - the stored entry is alive, and expires exactly when the new one would
//!   (both never, or at the same instant). A permanent save never lands on an
//!   entry that will expire, and an expiring save never on a permanent one: a
//!   retention the caller asked for is never weakened or silently extended.
//!
//! So a chat turn ("ok") in one session never swallows the same words in
//! another, and a save with new metadata is stored with it.

use super::rows::Cells;
use super::PreparedEntry;
use crate::entry::Micros;
use crate::error::Result;
use crate::normalize::normalize;

/// The columns `Stored::read` reads, in order.
pub(super) const STORED_COLUMNS: &str =
    "id, content, scope, session_id, kind, metadata, expires_at, key, valid_to";
/// How many columns `STORED_COLUMNS` names.
pub(super) const STORED_WIDTH: i32 = 9;

/// A stored entry, as far as duplicate detection looks at it.
#[derive(Debug, Clone)]
pub(super) struct Stored {
    pub id: i64,
    content: String,
    scope: Option<String>,
    session_id: Option<String>,
    kind: String,
    metadata: Option<String>,
    expires_at: Option<Micros>,
    key: Option<String>,
    valid_to: Option<Micros>,
}

impl Stored {
    /// Reads `STORED_COLUMNS` from the start of `row`.
    pub fn read(row: &impl Cells) -> Result<Self> {
        Ok(Self {
            id: row.get(0)?,
            content: row.get(1)?,
            scope: row.get(2)?,
            session_id: row.get(3)?,
            kind: row.get(4)?,
            metadata: row.get(5)?,
            expires_at: row.get(6)?,
            key: row.get(7)?,
            valid_to: row.get(8)?,
        })
    }

    /// `duplicates`, for a save outside any timeline: the stored entry must
    /// also still hold now (a superseded entry is no place to land).
    pub fn duplicates_now(&self, e: &PreparedEntry, normalized: &str, now: Micros) -> bool {
        self.valid_to.is_none_or(|to| to > now) && self.duplicates(e, normalized, now)
    }

    pub fn scope(&self) -> &Option<String> {
        &self.scope
    }

    pub fn key(&self) -> &Option<String> {
        &self.key
    }

    /// Whether `e` (whose normalised content is `normalized`) is a duplicate of
    /// this entry at `now`.
    pub fn duplicates(&self, e: &PreparedEntry, normalized: &str, now: Micros) -> bool {
        self.expires_at.is_none_or(|at| at > now)
            && e.valid_to.is_none()
            && self.expires_at == e.expires_at
            && self.scope == e.scope
            && self.session_id == e.session_id
            && self.kind == e.kind
            && self.key == e.key
            && same_metadata(self.metadata.as_deref(), e.metadata.as_deref())
            && normalize(&self.content) == normalized
    }
}

/// Whether two entries of one batch with equal normalised content are
/// duplicates of each other (the same rule, between new entries).
pub(super) fn same_fields(a: &PreparedEntry, b: &PreparedEntry) -> bool {
    a.expires_at == b.expires_at
        && (&a.key, a.valid_from, a.valid_to) == (&b.key, b.valid_from, b.valid_to)
        && a.scope == b.scope
        && a.session_id == b.session_id
        && a.kind == b.kind
        && same_metadata(a.metadata.as_deref(), b.metadata.as_deref())
}

/// Metadata compared as JSON values; none and `{}` are the same.
fn same_metadata(a: Option<&str>, b: Option<&str>) -> bool {
    if a == b {
        return true;
    }
    let parse = |m: Option<&str>| -> Option<serde_json::Value> {
        match m {
            None => Some(serde_json::Value::Object(serde_json::Map::new())),
            Some(text) => serde_json::from_str(text).ok(),
        }
    };
    match (parse(a), parse(b)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::same_metadata;

    #[test]
    fn metadata_compares_as_values() {
        assert!(same_metadata(None, None));
        assert!(same_metadata(None, Some("{}")));
        assert!(same_metadata(Some(r#"{"a":1,"b":[1,2]}"#), Some(r#"{"b": [1, 2], "a": 1}"#)));
        assert!(!same_metadata(Some(r#"{"a":1}"#), Some(r#"{"a":2}"#)));
        assert!(!same_metadata(None, Some(r#"{"a":1}"#)));
        assert!(!same_metadata(Some(r#"{"a":[1,2]}"#), Some(r#"{"a":[2,1]}"#)));
    }
}
