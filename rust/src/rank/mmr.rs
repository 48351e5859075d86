//! Maximal marginal relevance: re-ranks the best candidates so that each next
//! one is relevant and unlike those already chosen, and leaves out near
//! duplicates of a better candidate.

use std::collections::HashSet;

use super::Ranked;

/// Re-ranks the first `window` of `ranked` (best first). `similarity(i, j)`
/// compares candidates by index, in `[0, 1]`. Each step takes the candidate with
/// the best `lambda * relevance - (1 - lambda) * max similarity to those taken`
/// (relevance scaled to the best score); a candidate at least
/// `duplicate_similarity` like one taken is dropped. Candidates past the window
/// follow in their order. Returns each kept candidate with its diversity
/// penalty, `(1 - lambda) * max similarity`.
pub fn mmr(
    ranked: &[Ranked],
    similarity: impl Fn(usize, usize) -> f32,
    lambda: f32,
    duplicate_similarity: f32,
    window: usize,
) -> Vec<(Ranked, f32)> {
    let window = window.min(ranked.len());
    let best = ranked.first().map_or(1.0, |r| r.score).max(f32::MIN_POSITIVE);
    let mut left: Vec<usize> = (0..window).collect();
    // For each candidate left, its highest similarity to one taken so far.
    let mut closest = vec![0.0f32; window];
    let mut out = Vec::with_capacity(ranked.len());
    while !left.is_empty() {
        let value = |i: usize| lambda * ranked[i].score / best - (1.0 - lambda) * closest[i];
        let (at, &pick) = left
            .iter()
            .enumerate()
            .max_by(|(_, &a), (_, &b)| value(a).total_cmp(&value(b)).then(b.cmp(&a)))
            .expect("left is not empty");
        left.swap_remove(at);
        out.push((ranked[pick], (1.0 - lambda) * closest[pick]));
        left.retain(|&i| {
            closest[i] = closest[i].max(similarity(pick, i));
            closest[i] < duplicate_similarity
        });
    }
    out.extend(ranked[window..].iter().map(|r| (*r, 0.0)));
    out
}

/// The Jaccard similarity of two term sets.
pub fn jaccard(a: &HashSet<String>, b: &HashSet<String>) -> f32 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let shared = a.intersection(b).count();
    shared as f32 / (a.len() + b.len() - shared) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranked(scores: &[f32]) -> Vec<Ranked> {
        (0_i64..)
            .zip(scores)
            .map(|(id, &score)| Ranked { id, score, tokens: 1, recency: 1.0, bm25: score, dense: None })
            .collect()
    }

    #[test]
    fn lambda_one_keeps_order_and_drops_only_duplicates() {
        let r = ranked(&[3.0, 2.9, 1.0]);
        let same = |i: usize, j: usize| if i.min(j) == 0 && i.max(j) == 1 { 0.95 } else { 0.0 };
        let out = mmr(&r, same, 1.0, 0.9, 10);
        assert_eq!(out.iter().map(|(r, _)| r.id).collect::<Vec<_>>(), vec![0, 2]);
        let keep_all = mmr(&r, same, 1.0, 1.01, 10);
        assert_eq!(keep_all.len(), 3);
    }

    #[test]
    fn a_lower_lambda_prefers_novelty() {
        let r = ranked(&[3.0, 2.9, 2.5]);
        let sim = |i: usize, j: usize| if i.min(j) == 0 && i.max(j) == 1 { 0.8 } else { 0.1 };
        let out = mmr(&r, sim, 0.5, 0.9, 10);
        assert_eq!(out.iter().map(|(r, _)| r.id).collect::<Vec<_>>(), vec![0, 2, 1]);
        assert!((out[2].1 - 0.4).abs() < 1e-6, "penalty (1 - lambda) * 0.8");
    }

    #[test]
    fn candidates_past_the_window_follow_unchanged() {
        let r = ranked(&[3.0, 2.0, 1.0, 0.5]);
        let out = mmr(&r, |_, _| 0.0, 0.7, 0.9, 2);
        assert_eq!(out.iter().map(|(r, _)| r.id).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
    }

    #[test]
    fn jaccard_of_sets() {
        let set = |w: &[&str]| w.iter().map(|s| (*s).to_owned()).collect::<HashSet<_>>();
        assert_eq!(jaccard(&set(&["a", "b"]), &set(&["b", "c"])), 1.0 / 3.0);
        assert_eq!(jaccard(&set(&["a"]), &set(&["a"])), 1.0);
    }
}
