//! Greedy token-budget packing.

use crate::error::Result;
use crate::index::Candidate;

/// Takes candidates in rank order while they fit in `budget` tokens; a candidate
/// that does not fit is skipped and packing goes on with the next.
pub fn pack(candidates: &[Candidate], budget: u64) -> Vec<Candidate> {
    let mut left = budget;
    let mut out = Vec::new();
    for c in candidates {
        let tokens = u64::from(c.tokens);
        if tokens <= left {
            left -= tokens;
            out.push(*c);
        }
        if left == 0 {
            break;
        }
    }
    out
}

/// Packing when some candidates may be turned down only once their content is
/// known (a flagged hit, an entry deleted since the index looked, one below the
/// relevance floor). Fetches the greedy packing of what is still undecided, at
/// most `limit` items in all, drops what `keep` refuses (it is asked in rank
/// order within each round, and may remember what it accepted), and repacks
/// with the freed budget until nothing more is refused. Returns the kept items
/// in rank order, within `budget` and `limit`.
pub fn pack_checked<T>(
    candidates: &[Candidate],
    budget: u64,
    limit: usize,
    mut fetch: impl FnMut(&[i64]) -> Result<Vec<Option<T>>>,
    mut keep: impl FnMut(&T) -> bool,
) -> Result<Vec<(Candidate, T)>> {
    let mut left = budget;
    let mut decided = vec![false; candidates.len()];
    let mut taken: Vec<(usize, T)> = Vec::new();
    loop {
        let mut room = left;
        let window: Vec<usize> = (0..candidates.len())
            .filter(|&i| !decided[i])
            .filter(|&i| {
                let tokens = u64::from(candidates[i].tokens);
                let fits = tokens <= room;
                if fits {
                    room -= tokens;
                }
                fits
            })
            .take(limit.saturating_sub(taken.len()))
            .collect();
        if window.is_empty() {
            break;
        }
        let ids: Vec<i64> = window.iter().map(|&i| candidates[i].id).collect();
        let mut refused = false;
        for (i, item) in window.into_iter().zip(fetch(&ids)?) {
            decided[i] = true;
            match item {
                Some(item) if keep(&item) => {
                    left -= u64::from(candidates[i].tokens);
                    taken.push((i, item));
                }
                _ => refused = true,
            }
        }
        if !refused {
            break;
        }
    }
    taken.sort_by_key(|(i, _)| *i);
    Ok(taken.into_iter().map(|(i, item)| (candidates[i], item)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cand(id: i64, tokens: u32) -> Candidate {
        Candidate { id, score: 1.0 / (id as f32 + 1.0), tokens, recency: 1.0, prev: 0, session: 0 }
    }

    #[test]
    fn skips_what_does_not_fit_and_goes_on() {
        let cands = [cand(0, 50), cand(1, 100), cand(2, 30), cand(3, 20)];
        let ids: Vec<i64> = pack(&cands, 100).iter().map(|c| c.id).collect();
        assert_eq!(ids, vec![0, 2, 3]);
    }

    proptest! {
        #[test]
        fn packing_is_greedy_within_budget(
            tokens in proptest::collection::vec(0u32..500, 0..60),
            budget in 0u64..3000,
        ) {
            let cands: Vec<Candidate> =
                tokens.iter().enumerate().map(|(i, &t)| cand(i as i64, t)).collect();
            let packed = pack(&cands, budget);
            let used: u64 = packed.iter().map(|c| u64::from(c.tokens)).sum();
            prop_assert!(used <= budget);
            // Rank order is kept, and every skipped candidate did not fit then.
            let mut left = budget;
            let mut next = packed.iter().peekable();
            for c in &cands {
                if next.peek().is_some_and(|p| p.id == c.id) {
                    left -= u64::from(c.tokens);
                    next.next();
                } else if left > 0 {
                    prop_assert!(u64::from(c.tokens) > left);
                }
            }
            prop_assert!(next.next().is_none());
        }
    }

    #[test]
    fn refused_candidates_free_their_budget() {
        let cands = [cand(0, 60), cand(1, 50), cand(2, 30)];
        let all = |ids: &[i64]| Ok(ids.iter().map(|&id| Some(id)).collect());
        let packed = pack_checked(&cands, 100, usize::MAX, all, |&id| id != 0).unwrap();
        let ids: Vec<i64> = packed.iter().map(|(c, _)| c.id).collect();
        assert_eq!(ids, vec![1, 2]);
    }

    #[test]
    fn a_limit_caps_the_kept_items_and_refused_ones_do_not_count() {
        let cands: Vec<Candidate> = (0..6).map(|i| cand(i, 10)).collect();
        let all = |ids: &[i64]| Ok(ids.iter().map(|&id| Some(id)).collect());
        let ids = |packed: Vec<(Candidate, i64)>| packed.iter().map(|(c, _)| c.id).collect::<Vec<_>>();
        assert_eq!(ids(pack_checked(&cands, 1000, 2, all, |_| true).unwrap()), vec![0, 1]);
        assert_eq!(ids(pack_checked(&cands, 1000, 3, all, |&id| id % 2 == 1).unwrap()), vec![1, 3, 5]);
        assert_eq!(ids(pack_checked(&cands, 1000, 0, all, |_| true).unwrap()), Vec::<i64>::new());
        // The budget still binds first.
        assert_eq!(ids(pack_checked(&cands, 25, 5, all, |_| true).unwrap()), vec![0, 1]);
    }

    proptest! {
        #[test]
        fn checked_packing_keeps_only_accepted_within_budget(
            tokens in proptest::collection::vec(1u32..300, 0..40),
            refused in proptest::collection::vec(any::<bool>(), 40),
            budget in 0u64..2000,
        ) {
            let cands: Vec<Candidate> =
                tokens.iter().enumerate().map(|(i, &t)| cand(i as i64, t)).collect();
            let packed = pack_checked(
                &cands,
                budget,
                usize::MAX,
                |ids| Ok(ids.iter().map(|&id| Some(id)).collect()),
                |&id| !refused[id as usize],
            ).unwrap();
            let used: u64 = packed.iter().map(|(c, _)| u64::from(c.tokens)).sum();
            prop_assert!(used <= budget);
            prop_assert!(packed.iter().all(|(c, _)| !refused[c.id as usize]));
            prop_assert!(packed.windows(2).all(|w| w[0].0.id < w[1].0.id));
            // Nothing accepted that would still fit was left out.
            let left = budget - used;
            for c in &cands {
                let chosen = packed.iter().any(|(p, _)| p.id == c.id);
                if !chosen && !refused[c.id as usize] {
                    prop_assert!(u64::from(c.tokens) > left);
                }
            }
            // With nothing refused it is exactly the plain greedy packing.
            if refused.iter().take(cands.len()).all(|r| !r) {
                let plain: Vec<i64> = pack(&cands, budget).iter().map(|c| c.id).collect();
                prop_assert_eq!(packed.iter().map(|(c, _)| c.id).collect::<Vec<_>>(), plain);
            }
        }
    }
}
