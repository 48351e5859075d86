//! What a search returns for one entry: its score, its size in tokens, and
//! what ranking after the search needs to know of it.

/// One entry found by a search, before ranking and packing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    pub id: i64,
    /// `relevance * recency`.
    pub score: f32,
    pub tokens: u32,
    /// The recency multiplier, in `[1, 1 + weight]`.
    pub recency: f32,
    /// The previous turn of the entry's session (the one it answers), or 0.
    pub prev: i64,
    /// `schema::session_key` of the entry's scope and session (0 for none).
    pub session: u64,
}
