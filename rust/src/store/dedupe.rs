//! When a save is a duplicate of an entry already stored: the one rule that
//! single saves, grouped bulk saves and repeats within one call share.
//!
//! A new entry is a duplicate of an earlier one only when nothing the caller
//! could tell apart differs, and keeping the earlier one loses nothing:
//! - the normalised content is equal;
//! - the scope, session, kind, key and metadata are equal (metadata as JSON values:
//!   key order does not matter, and no metadata equals `{}`);
//! - the earlier entry is alive, and expires exactly when the new one would
//!   (both never, or at the same instant). A permanent save never lands on an
//!   entry that will expire, and an expiring save never on a permanent one: a
//!   retention the caller asked for is never weakened or silently extended;
//! - for a save outside any timeline ([`Earlier::takes`]): both end at the
//!   same time (both hold until superseded, or both end at the same instant),
//!   and the earlier one still holds now. An entry that has ended, or was
//!   superseded, is no place to land; an open-ended save never lands on an
//!   entry that ends. Where each starts (`valid_from`) is not compared, as its
//!   timestamp is not. A keyed save compares with the version it would
//!   supersede instead (`timeline.rs`).
//!
//! So a chat turn ("ok") in one session never swallows the same words in
//! another, a save with new metadata is stored with it, and `save_many([a, b])`
//! stores what `save(a)` then `save(b)` would (a scope's cap on entries aside:
//! a call evicts once, at its end).

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

    /// Whether `e` (whose normalised content is `normalized`), saved outside
    /// any timeline at `now`, is a duplicate of this entry.
    pub fn duplicates_now(&self, e: &PreparedEntry, normalized: &str, now: Micros) -> bool {
        self.fields().takes(&Fields::of(e), now) && normalize(&self.content) == normalized
    }

    pub fn scope(&self) -> &Option<String> {
        &self.scope
    }

    pub fn key(&self) -> &Option<String> {
        &self.key
    }

    /// Whether `e` (whose normalised content is `normalized`) is a duplicate of
    /// this entry at `now`, their validity aside (for a keyed save, which
    /// compares where each holds itself).
    pub fn duplicates(&self, e: &PreparedEntry, normalized: &str, now: Micros) -> bool {
        self.fields().matches(&Fields::of(e), now) && normalize(&self.content) == normalized
    }

    fn fields(&self) -> Earlier<'_> {
        Earlier(Fields {
            scope: self.scope.as_deref(),
            session_id: self.session_id.as_deref(),
            kind: &self.kind,
            key: self.key.as_deref(),
            metadata: self.metadata.as_deref(),
            expires_at: self.expires_at,
            valid_to: self.valid_to,
        })
    }
}

/// Whether `later`, an entry of a bulk save with the same normalised content
/// as the `earlier` one of the same call, is a duplicate of it at `now`: as if
/// `earlier` had been stored by a save of its own first.
pub(super) fn repeats(earlier: &PreparedEntry, later: &PreparedEntry, now: Micros) -> bool {
    Earlier(Fields::of(earlier)).takes(&Fields::of(later), now)
}

/// What the rule compares besides content.
struct Fields<'a> {
    scope: Option<&'a str>,
    session_id: Option<&'a str>,
    kind: &'a str,
    key: Option<&'a str>,
    metadata: Option<&'a str>,
    expires_at: Option<Micros>,
    valid_to: Option<Micros>,
}

impl<'a> Fields<'a> {
    fn of(e: &'a PreparedEntry) -> Self {
        Self {
            scope: e.scope.as_deref(),
            session_id: e.session_id.as_deref(),
            kind: &e.kind,
            key: e.key.as_deref(),
            metadata: e.metadata.as_deref(),
            expires_at: e.expires_at,
            valid_to: e.valid_to,
        }
    }
}

/// The fields of the entry a new one may land on.
struct Earlier<'a>(Fields<'a>);

impl Earlier<'_> {
    /// Whether `new` may land on this entry at `now`, validity aside.
    fn matches(&self, new: &Fields<'_>, now: Micros) -> bool {
        let old = &self.0;
        old.expires_at.is_none_or(|at| at > now)
            && old.expires_at == new.expires_at
            && (old.scope, old.session_id, old.kind, old.key)
                == (new.scope, new.session_id, new.kind, new.key)
            && same_metadata(old.metadata, new.metadata)
    }

    /// Whether `new`, saved outside any timeline, may land on this entry at
    /// `now`: it also ends when this one does, and this one still holds.
    fn takes(&self, new: &Fields<'_>, now: Micros) -> bool {
        self.0.valid_to == new.valid_to && self.0.valid_to.is_none_or(|to| to > now) && self.matches(new, now)
    }
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
