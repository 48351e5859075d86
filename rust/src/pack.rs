//! Greedy token-budget packing.

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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cand(id: i64, tokens: u32) -> Candidate {
        Candidate { id, score: 1.0 / (id as f32 + 1.0), tokens }
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
}
