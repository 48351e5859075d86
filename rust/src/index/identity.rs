//! The stamp an index commit carries, which ties the index to one database and
//! one point of its change log.
//!
//! A commit records the database's random id (`meta`, made once by migration 5),
//! the number of the last change it includes, and that change's random nonce.
//! On open the database must confirm all three: an index left by another
//! database (a different id), by a later state of this one (a backup restored
//! over it: the change is past the log's head), or by another history of this
//! one (an older copy that then took other writes: the change at that number
//! has another nonce) is rebuilt. The id alone would miss the last two, and
//! `(seq, entry_id)` would miss the third, since ids and change numbers follow
//! the same AUTOINCREMENT counters in both histories.

use serde_json::{json, Value};

use crate::error::Result;
use crate::store::Store;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    /// The database's id; empty when the database has none.
    pub database: String,
    /// The last change the commit includes (0: none).
    pub seq: i64,
    /// Change `seq`'s nonce (0 for change 0).
    pub nonce: i64,
}

impl Stamp {
    /// The stamp of a commit that includes every change up to `seq` of `store`.
    pub fn of(store: &Store, database: &str, seq: i64) -> Result<Self> {
        let nonce = if seq > 0 { store.change_nonce(seq)?.unwrap_or(0) } else { 0 };
        Ok(Self { database: database.to_owned(), seq, nonce })
    }

    /// The commit payload.
    pub fn payload(&self) -> String {
        json!({ "database": self.database, "seq": self.seq, "nonce": self.nonce }).to_string()
    }

    /// Reads a commit payload; `None` for anything else, such as the bare
    /// change number that indexes wrote before stamps.
    pub fn parse(payload: &str) -> Option<Self> {
        let value: Value = serde_json::from_str(payload).ok()?;
        Some(Self {
            database: value.get("database")?.as_str()?.to_owned(),
            seq: value.get("seq")?.as_i64()?,
            nonce: value.get("nonce")?.as_i64()?,
        })
    }

    /// Why `store` (whose id is `database` and whose log ends at `head`) does not
    /// confirm this stamp, or `None` when it does.
    pub fn refuted_by(&self, store: &Store, database: &str, head: i64) -> Result<Option<String>> {
        if database.is_empty() {
            return Ok(Some("the database has no id to tie an index to".into()));
        }
        if self.database != database {
            return Ok(Some(format!("it was built from another database ({})", self.database)));
        }
        if self.seq > head {
            return Ok(Some(format!(
                "it has change {} but the database ends at {head} (restored from a backup?)",
                self.seq
            )));
        }
        if self.seq > 0 && store.change_nonce(self.seq)? != Some(self.nonce) {
            return Ok(Some(format!(
                "the database's change {} is not the one it applied (the file was replaced by a copy with another history?)",
                self.seq
            )));
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::Stamp;

    #[test]
    fn a_payload_reads_back_and_nothing_else_passes_for_one() {
        let stamp = Stamp { database: "ab12".into(), seq: 42, nonce: -7 };
        assert_eq!(Stamp::parse(&stamp.payload()), Some(stamp));
        for other in ["42", "", "{}", "{\"database\":\"x\",\"seq\":\"1\",\"nonce\":0}", "null"] {
            assert_eq!(Stamp::parse(other), None, "{other}");
        }
    }
}
