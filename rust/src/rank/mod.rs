//! From ranked lists to the final order: fusion of BM25 and dense matches,
//! replies and sessions lending relevance, then maximal marginal relevance;
//! and the relevance floor that packing applies to what comes out.
//! Pure functions; the engine feeds them.

mod floor;
mod fuse;
mod mmr;
mod replies;
mod sessions;
mod words;

pub use floor::{Floor, Judge};
pub use fuse::{fuse, Ranked};
pub use mmr::{jaccard, mmr, word_set, Duplicates};
pub use replies::lend_to_previous;
pub use sessions::{boost_sessions, session_best};
pub use words::QueryWords;
