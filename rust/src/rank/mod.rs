//! From ranked lists to the final order: fusion of BM25 and dense matches,
//! replies and sessions lending relevance, then maximal marginal relevance.
//! Pure functions; the engine feeds them.

mod fuse;
mod mmr;
mod replies;
mod sessions;

pub use fuse::{fuse, Ranked};
pub use mmr::{jaccard, mmr, word_set, Duplicates};
pub use replies::lend_to_previous;
pub use sessions::{boost_sessions, session_best};
