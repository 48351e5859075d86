//! A tantivy collector for the top `k` documents by BM25 times recency.
//!
//! The recency multiplier is at most `1 + weight`, so once `k` documents are
//! held, one whose BM25 score is at most the k-th boosted score divided by
//! that bound cannot enter: that is the pruning threshold handed to tantivy
//! (block-max WAND for a plain disjunction). One pass, and exact.
//!
//! Segments are searched one after another, and each starts from the best `k`
//! of those before it: its pruning threshold starts where the last one ended,
//! rather than at zero, so a search over several segments (the segment cap,
//! `segments.rs`) scores little more than one over a single segment.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::sync::Arc;

use parking_lot::Mutex;
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::ColumnValues;
use tantivy::query::Weight;
use tantivy::{DocId, Score, Searcher, SegmentOrdinal, SegmentReader};

use super::candidate::Candidate;
use super::tail::recency_boost;
use crate::entry::Micros;

pub struct BoostedTopK<'a> {
    pub k: usize,
    pub now: Micros,
    pub recency_weight: f32,
    pub half_life_us: f64,
    /// Only entries whose validity interval holds this time; `None`: any.
    pub valid_at: Option<Micros>,
    /// Committed documents the tail has replaced or deleted.
    pub tombstones: &'a HashMap<i64, i64>,
    /// Only these entries, when given (a metadata filter's selection).
    pub allowed: Option<Arc<HashSet<i64>>>,
    /// The searcher's columns, by segment ordinal.
    pub columns: &'a SegmentColumns,
    /// The best `k` of the segments searched so far (start with the default).
    pub carried: Mutex<Vec<Candidate>>,
}

impl BoostedTopK<'_> {
    fn max_boost(&self) -> f32 {
        1.0 + self.recency_weight.max(0.0)
    }
}

/// A candidate ordered by score, then id (as the final ranking breaks ties).
struct ByScore(Candidate);

impl PartialEq for ByScore {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for ByScore {}
impl PartialOrd for ByScore {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for ByScore {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.score.total_cmp(&other.0.score).then(self.0.id.cmp(&other.0.id))
    }
}

/// Relative slack below the pruning bound: about eight f32 units in the last
/// place.
const TIE_MARGIN: Score = 1e-6;

pub struct SegmentTopK {
    k: usize,
    now: Micros,
    valid_at: Option<Micros>,
    recency_weight: f32,
    half_life_us: f64,
    max_boost: f32,
    tombstones: HashMap<i64, i64>,
    allowed: Option<Arc<HashSet<i64>>>,
    columns: Columns,
    /// The best `k` so far, worst on top.
    heap: BinaryHeap<Reverse<ByScore>>,
}

impl SegmentTopK {
    /// Offers a document; returns the BM25 score a later one must beat.
    fn offer(&mut self, doc: DocId, relevance: Score) -> Score {
        let cols = &self.columns;
        let recency = recency_boost(cols.ts.get_val(doc), self.now, self.recency_weight, self.half_life_us);
        let score = relevance * recency;
        // The order is by (score, id). Most documents offered fall short on
        // score alone; the other columns, and whether the entry is still live,
        // are read only for one that would make the heap.
        let worst = (self.heap.len() >= self.k).then(|| self.heap.peek().map(|Reverse(w)| w.0)).flatten();
        if worst.is_some_and(|w| score < w.score) {
            return self.threshold();
        }
        let id = cols.id.get_val(doc);
        let beats_worst = worst.is_none_or(|w| score.total_cmp(&w.score).then(id.cmp(&w.id)).is_gt());
        if beats_worst
            && !self.tombstones.contains_key(&id)
            && self.allowed.as_ref().is_none_or(|ids| ids.contains(&id))
            && cols.expires.get_val(doc) > self.now
            && self
                .valid_at
                .is_none_or(|at| cols.valid_from.get_val(doc) <= at && cols.valid_to.get_val(doc) > at)
        {
            let candidate = ByScore(Candidate {
                id,
                score,
                tokens: u32::try_from(cols.tokens.get_val(doc)).unwrap_or(u32::MAX),
                recency,
                prev: cols.prev.get_val(doc),
                session: cols.session.get_val(doc),
            });
            if worst.is_some() {
                if let Some(mut top) = self.heap.peek_mut() {
                    // The worst makes way, replaced in place: one sift down.
                    *top = Reverse(candidate);
                }
            } else {
                self.heap.push(Reverse(candidate));
            }
        }
        self.threshold()
    }

    /// The BM25 score a document must exceed to be offered. The pruning skips
    /// scores at or below it, but a document whose best boosted score only ties
    /// the worst kept one can still win on id, and the division and the product
    /// each round: so the bound is lowered by a few units in the last place.
    fn threshold(&self) -> Score {
        match self.heap.peek() {
            Some(Reverse(worst)) if self.heap.len() >= self.k => {
                worst.0.score / self.max_boost * (1.0 - TIE_MARGIN)
            }
            _ => Score::MIN,
        }
    }
}

impl SegmentCollector for SegmentTopK {
    type Fruit = Vec<Candidate>;

    fn collect(&mut self, doc: DocId, score: Score) {
        self.offer(doc, score);
    }

    fn harvest(self) -> Vec<Candidate> {
        self.heap.into_iter().map(|Reverse(r)| r.0).collect()
    }
}

impl Collector for BoostedTopK<'_> {
    type Fruit = Vec<Candidate>;
    type Child = SegmentTopK;

    fn for_segment(&self, ord: SegmentOrdinal, segment: &SegmentReader) -> tantivy::Result<SegmentTopK> {
        let columns = match self.columns.0.get(ord as usize) {
            Some(columns) => columns.clone(),
            None => Columns::open(segment)?,
        };
        Ok(SegmentTopK {
            k: self.k.max(1),
            now: self.now,
            valid_at: self.valid_at,
            recency_weight: self.recency_weight,
            half_life_us: self.half_life_us,
            max_boost: self.max_boost(),
            tombstones: self.tombstones.clone(),
            allowed: self.allowed.clone(),
            columns,
            heap: BinaryHeap::with_capacity(self.k.max(1) + 1),
        })
    }

    fn requires_scoring(&self) -> bool {
        true
    }

    fn merge_fruits(&self, fruits: Vec<Vec<Candidate>>) -> tantivy::Result<Vec<Candidate>> {
        let carried = std::mem::take(&mut *self.carried.lock());
        Ok(best(carried.into_iter().chain(fruits.into_iter().flatten()), self.k))
    }

    fn collect_segment(
        &self,
        weight: &dyn Weight,
        segment_ord: u32,
        reader: &SegmentReader,
    ) -> tantivy::Result<Vec<Candidate>> {
        let mut child = self.for_segment(segment_ord, reader)?;
        child.heap.extend(self.carried.lock().iter().map(|c| Reverse(ByScore(*c))));
        let alive = reader.alive_bitset();
        weight.for_each_pruning(child.threshold(), reader, &mut |doc, score| {
            if alive.is_some_and(|a| a.is_deleted(doc)) {
                child.threshold()
            } else {
                child.offer(doc, score)
            }
        })?;
        let found = child.harvest();
        // Merged rather than replaced: were segments ever searched in
        // parallel, another's best would be in `carried` too.
        let mut carried = self.carried.lock();
        let before = std::mem::take(&mut *carried);
        *carried = best(before.into_iter().chain(found), self.k);
        Ok(Vec::new())
    }
}

/// The best `k` of `candidates` by (score, id), each entry once.
fn best(candidates: impl Iterator<Item = Candidate>, k: usize) -> Vec<Candidate> {
    let mut all: Vec<Candidate> = candidates.collect();
    all.sort_by(|a, b| b.score.total_cmp(&a.score).then(b.id.cmp(&a.id)));
    all.dedup_by_key(|c| c.id);
    all.truncate(k);
    all
}

/// Each segment's fast-field columns, opened once per searcher rather than per
/// query.
#[derive(Clone, Default)]
pub struct SegmentColumns(Vec<Columns>);

impl SegmentColumns {
    pub fn open(searcher: &Searcher) -> tantivy::Result<Self> {
        searcher.segment_readers().iter().map(Columns::open).collect::<tantivy::Result<_>>().map(Self)
    }
}

/// A segment's fast-field columns.
#[derive(Clone)]
struct Columns {
    id: Arc<dyn ColumnValues<i64>>,
    ts: Arc<dyn ColumnValues<i64>>,
    tokens: Arc<dyn ColumnValues<u64>>,
    expires: Arc<dyn ColumnValues<i64>>,
    prev: Arc<dyn ColumnValues<i64>>,
    session: Arc<dyn ColumnValues<u64>>,
    valid_from: Arc<dyn ColumnValues<i64>>,
    valid_to: Arc<dyn ColumnValues<i64>>,
}

impl Columns {
    fn open(segment: &SegmentReader) -> tantivy::Result<Self> {
        let fast = segment.fast_fields();
        Ok(Self {
            id: fast.i64("id")?.first_or_default_col(0),
            ts: fast.i64("ts")?.first_or_default_col(0),
            tokens: fast.u64("tokens")?.first_or_default_col(0),
            expires: fast.i64("expires")?.first_or_default_col(i64::MAX),
            prev: fast.i64("prev")?.first_or_default_col(0),
            session: fast.u64("session_key")?.first_or_default_col(0),
            valid_from: fast.i64("valid_from")?.first_or_default_col(i64::MIN),
            valid_to: fast.i64("valid_to")?.first_or_default_col(i64::MAX),
        })
    }
}
