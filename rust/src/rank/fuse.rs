//! Fusing BM25 candidates with dense neighbours.

use std::collections::HashMap;

use crate::config::{Fusion, Hybrid};
use crate::index::dense::{dot, Neighbour};
use crate::index::Candidate;

/// A candidate after fusion. `score = relevance * recency`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Ranked {
    pub id: i64,
    pub score: f32,
    pub tokens: u32,
    pub recency: f32,
    /// The BM25 relevance, 0 when BM25 did not rank the entry.
    pub bm25: f32,
    /// Cosine similarity to the query, when the entry has a vector.
    pub dense: Option<f32>,
    /// The previous turn of the entry's session, or 0 (unknown for entries
    /// only the dense side found).
    pub prev: i64,
    /// `schema::session_key` of the entry's scope and session, 0 for none.
    pub session: u64,
    /// The part of the relevance (before replies and sessions lend) that the
    /// dense side gave: 0 in a lexical query.
    pub dense_share: f32,
}

impl Ranked {
    pub fn relevance(&self) -> f32 {
        self.score / self.recency
    }

    /// A BM25 candidate as it ranks without dense retrieval.
    pub fn lexical(c: &Candidate) -> Self {
        Self {
            id: c.id,
            score: c.score,
            tokens: c.tokens,
            recency: c.recency,
            bm25: c.score / c.recency,
            dense: None,
            prev: c.prev,
            session: c.session,
            dense_share: 0.0,
        }
    }
}

/// Fuses BM25 `lexical` candidates (best first) with `dense` neighbours (best
/// first). `vectors` holds the unit vectors of lexical candidates, so that a
/// weighted fusion scores every candidate on both sides; `query` is the unit
/// query vector and `recency` the multiplier for an entry of a given time (BM25
/// candidates carry theirs). The result is best first: BM25 candidates (unless
/// `dense_weight` is 1) and whatever else scores above 0.
///
/// Weighted fusion scales BM25 min-max over the lexical list: the best match 1,
/// the weakest 0 (all 1 when they are equal), so the dense side decides among
/// the weak BM25 matches instead of being swamped by their common floor.
pub fn fuse(
    lexical: &[Candidate],
    dense: &[Neighbour],
    vectors: &HashMap<i64, Vec<f32>>,
    query: &[f32],
    hybrid: &Hybrid,
    recency: impl Fn(i64) -> f32,
) -> Vec<Ranked> {
    let w = hybrid.dense_weight;
    let mut out: HashMap<i64, Ranked> = HashMap::with_capacity(lexical.len() + dense.len());
    for c in lexical {
        let cosine = vectors.get(&c.id).map(|v| dot(query, v));
        out.insert(c.id, Ranked { dense: cosine, ..Ranked::lexical(c) });
    }
    for n in dense {
        out.entry(n.id).and_modify(|r| r.dense = Some(n.cosine)).or_insert(Ranked {
            id: n.id,
            score: 0.0,
            tokens: n.tokens,
            recency: recency(n.timestamp),
            bm25: 0.0,
            dense: Some(n.cosine),
            prev: 0,
            session: n.session,
            dense_share: 0.0,
        });
    }
    // (relevance, its dense share) by id.
    let relevance: HashMap<i64, (f32, f32)> = match hybrid.fusion {
        Fusion::Weighted => {
            let (low, high) = lexical
                .iter()
                .map(|c| c.score / c.recency)
                .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), x| (lo.min(x), hi.max(x)));
            out.values()
                .map(|r| {
                    let bm25 = match r.bm25 {
                        x if x <= 0.0 => 0.0,
                        _ if high <= low => 1.0,
                        x => (x - low) / (high - low),
                    };
                    let cosine = w * r.dense.unwrap_or(0.0).max(0.0);
                    (r.id, ((1.0 - w) * bm25 + cosine, cosine))
                })
                .collect()
        }
        Fusion::Rrf => {
            let mut fused: HashMap<i64, (f32, f32)> = HashMap::with_capacity(out.len());
            let mut by_bm25: Vec<&Ranked> = out.values().filter(|r| r.bm25 > 0.0).collect();
            by_bm25.sort_by(|a, b| b.bm25.total_cmp(&a.bm25).then(b.id.cmp(&a.id)));
            for (rank, r) in by_bm25.into_iter().enumerate() {
                fused.entry(r.id).or_default().0 += (1.0 - w) / (hybrid.rrf_k + 1.0 + rank as f32);
            }
            for (rank, n) in dense.iter().enumerate() {
                let share = w / (hybrid.rrf_k + 1.0 + rank as f32);
                let f = fused.entry(n.id).or_default();
                *f = (f.0 + share, f.1 + share);
            }
            out.keys().map(|id| (*id, fused.get(id).copied().unwrap_or_default())).collect()
        }
    };
    let mut ranked: Vec<Ranked> = out
        .into_values()
        .map(|r| {
            let (relevance, dense_share) = relevance[&r.id];
            Ranked { score: relevance * r.recency, dense_share, ..r }
        })
        // A BM25 match stays while BM25 counts at all, even the weakest (0 after
        // min-max scaling): `dense_weight` 0 is BM25 alone, 1 dense alone.
        .filter(|r| r.score > 0.0 || (w < 1.0 && r.bm25 > 0.0))
        .collect();
    ranked.sort_by(|a, b| b.score.total_cmp(&a.score).then(b.id.cmp(&a.id)));
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(id: i64, relevance: f32) -> Candidate {
        Candidate { id, score: relevance, tokens: 5, recency: 1.0, prev: 0, session: 0 }
    }

    fn near(id: i64, cosine: f32) -> Neighbour {
        Neighbour { id, cosine, timestamp: 0, tokens: 5, session: 0 }
    }

    fn ids(r: &[Ranked]) -> Vec<i64> {
        r.iter().map(|r| r.id).collect()
    }

    #[test]
    fn weighted_fusion_scores_both_sides_of_every_candidate() {
        let lexical = [cand(1, 10.0), cand(2, 9.0), cand(4, 8.0)];
        let dense = [near(3, 0.9), near(2, 0.8)];
        let vectors = HashMap::from([(1, vec![0.0, 1.0]), (2, vec![0.8, 0.6])]);
        let hybrid = Hybrid { fusion: Fusion::Weighted, dense_weight: 0.5, rrf_k: 60.0 };
        let r = fuse(&lexical, &dense, &vectors, &[1.0, 0.0], &hybrid, |_| 1.0);
        // 2: 0.5*0.5 + 0.5*0.8 = 0.65; 1: 0.5*1 + 0 = 0.5; 3: 0.45; 4: 0, kept.
        assert_eq!(ids(&r), vec![2, 1, 3, 4]);
        assert!((r[0].relevance() - 0.65).abs() < 1e-6);
        // What the dense side gave is kept apart: 2's cosine share, 3's all.
        assert!((r[0].dense_share - 0.4).abs() < 1e-6);
        assert!((r[2].relevance() - r[2].dense_share).abs() < 1e-9 && r[1].dense_share == 0.0);
        assert_eq!(r[1].dense, Some(0.0));
        assert_eq!(r[2].bm25, 0.0);
        assert_eq!((r[3].score, r[3].bm25), (0.0, 8.0));
    }

    #[test]
    fn weighted_fusion_scales_bm25_min_max_over_the_lexical_list() {
        let hybrid = Hybrid { fusion: Fusion::Weighted, dense_weight: 0.3, rrf_k: 60.0 };
        let relevance = |lexical: &[Candidate], dense: &[Neighbour]| {
            let mut r: Vec<(i64, f32)> = fuse(lexical, dense, &HashMap::new(), &[1.0], &hybrid, |_| 1.0)
                .iter()
                .map(|r| (r.id, r.relevance()))
                .collect();
            r.sort_by_key(|(id, _)| *id);
            r
        };
        // BM25 10 / 5 / 4 -> 1 / 1/6 / 0, recency left out; dense-only 0.
        let lexical = [cand(1, 10.0), Candidate { score: 10.0, recency: 2.0, ..cand(2, 0.0) }, cand(3, 4.0)];
        let dense = [near(3, 0.9), near(2, 0.5), near(5, 0.4), near(1, 0.1)];
        let got = relevance(&lexical, &dense);
        let want = [(1, 0.7 + 0.03), (2, 0.7 / 6.0 + 0.15), (3, 0.27), (5, 0.12)];
        for ((id, r), (wid, w)) in got.iter().zip(want) {
            assert_eq!(*id, wid);
            assert!((r - w).abs() < 1e-6, "{id}: {r} != {w}");
        }
        // Equal BM25 (or one match) counts fully.
        let got = relevance(&[cand(1, 3.0), cand(2, 3.0)], &[]);
        assert_eq!(got, vec![(1, 0.7), (2, 0.7)]);
        assert_eq!(relevance(&[cand(1, 0.5)], &[near(2, 0.5)]), vec![(1, 0.7), (2, 0.15)]);
    }

    #[test]
    fn weight_zero_is_bm25_order_and_one_is_dense_order() {
        let lexical = [cand(1, 3.0), cand(2, 2.0), cand(3, 1.0)];
        let dense = [near(3, 0.9), near(2, 0.5), near(1, 0.1)];
        let vectors = HashMap::new();
        for fusion in [Fusion::Weighted, Fusion::Rrf] {
            let at = |w| {
                let hybrid = Hybrid { fusion, dense_weight: w, rrf_k: 60.0 };
                ids(&fuse(&lexical, &dense, &vectors, &[1.0], &hybrid, |_| 1.0))
            };
            assert_eq!(at(0.0), vec![1, 2, 3], "{fusion:?}");
            assert_eq!(at(1.0), vec![3, 2, 1], "{fusion:?}");
        }
    }

    #[test]
    fn rrf_rewards_agreement_and_recency_multiplies() {
        let lexical = [cand(1, 3.0), cand(2, 2.0)];
        let dense = [near(2, 0.9), near(3, 0.8)];
        let hybrid = Hybrid { fusion: Fusion::Rrf, dense_weight: 0.5, rrf_k: 60.0 };
        let r = fuse(&lexical, &dense, &HashMap::new(), &[1.0], &hybrid, |_| 1.0);
        assert_eq!(ids(&r), vec![2, 1, 3]);
        // Only dense-only entries take `recency` here; BM25 candidates carry theirs.
        let r = fuse(&lexical, &dense, &HashMap::new(), &[1.0], &hybrid, |_| 2.0);
        assert_eq!(ids(&r), vec![2, 3, 1]);
        let three = r.iter().find(|r| r.id == 3).unwrap();
        assert_eq!(three.recency, 2.0);
        assert!((three.score - 2.0 * 0.5 / 62.0).abs() < 1e-6);
        assert!((three.relevance() - three.dense_share).abs() < 1e-9);
        let two = r.iter().find(|r| r.id == 2).unwrap();
        assert!((two.dense_share - 0.5 / 61.0).abs() < 1e-9 && two.relevance() > two.dense_share);
    }
}
