//! The mark a clean close leaves in the index directory.
//!
//! Opening checks that the index holds as many documents as the store holds
//! entries, to catch a commit that half-failed (a full disk) and left a payload
//! claiming changes its segments lack. Counting a million entries takes tens of
//! milliseconds, so an index that was closed cleanly, with no failed commit in
//! that session, says so: a file holding its last commit's payload (the stamp
//! of `identity.rs`). The
//! next open takes the mark away (a crash later leaves none) and skips the count
//! when the mark matches the index it opened.

use std::path::Path;

const FILE: &str = "closed-cleanly";

/// Removes the mark and returns whether it named the commit whose payload is
/// `payload` (never an empty one).
pub fn take(dir: &Path, payload: &str) -> bool {
    let path = dir.join(FILE);
    let Ok(text) = std::fs::read_to_string(&path) else { return false };
    // A mark that cannot be removed would vouch for the next session too.
    std::fs::remove_file(&path).is_ok() && !payload.is_empty() && text == payload
}

/// Leaves the mark for an index whose last commit's payload is `payload`;
/// returns whether it was written.
pub fn leave(dir: &Path, payload: &str) -> bool {
    match std::fs::write(dir.join(FILE), payload) {
        Ok(()) => true,
        Err(err) => {
            log::warn!("cannot mark the search index as closed cleanly: {err}");
            false
        }
    }
}

/// Takes a mark back (the close it vouched for failed after all).
pub fn remove(dir: &Path) {
    let _ = std::fs::remove_file(dir.join(FILE));
}
