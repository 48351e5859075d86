//! Replies vouch for what they answer: a candidate lends a share of its
//! relevance to the previous turn of its session (the message it replies to),
//! when that turn is a candidate too. Evidence is often stated in one turn and
//! echoed, with the words a later question uses, in the reply.

use std::collections::HashMap;

use super::Ranked;

/// Adds `weight` x each candidate's relevance to its previous turn's, then
/// re-sorts best first. Scores stay `relevance * recency`.
pub fn lend_to_previous(ranked: &mut [Ranked], weight: f32) {
    if weight <= 0.0 || ranked.len() < 2 {
        return;
    }
    let at: HashMap<i64, usize> = ranked.iter().enumerate().map(|(i, r)| (r.id, i)).collect();
    let own: Vec<f32> = ranked.iter().map(Ranked::relevance).collect();
    let mut lent = vec![0.0f32; ranked.len()];
    for (i, r) in ranked.iter().enumerate() {
        if let Some(&previous) = (r.prev != 0).then(|| at.get(&r.prev)).flatten() {
            lent[previous] += weight * own[i];
        }
    }
    for ((r, own), lent) in ranked.iter_mut().zip(own).zip(lent) {
        r.score = (own + lent) * r.recency;
    }
    ranked.sort_by(|a, b| b.score.total_cmp(&a.score).then(b.id.cmp(&a.id)));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(id: i64, relevance: f32, prev: i64) -> Ranked {
        Ranked {
            id,
            score: relevance * 2.0,
            tokens: 1,
            recency: 2.0,
            bm25: relevance,
            prev,
            ..Ranked::default()
        }
    }

    #[test]
    fn a_strong_reply_lifts_the_turn_it_answers() {
        // 2 answers 1; 3 is a bystander between them in score.
        let mut ranked = vec![turn(2, 1.0, 1), turn(3, 0.7, 0), turn(1, 0.6, 0)];
        lend_to_previous(&mut ranked, 0.2);
        assert_eq!(ranked.iter().map(|r| r.id).collect::<Vec<_>>(), vec![2, 1, 3]);
        assert!((ranked[1].relevance() - 0.8).abs() < 1e-6);
        let mut unchanged = vec![turn(2, 1.0, 1), turn(3, 0.7, 0), turn(1, 0.6, 0)];
        lend_to_previous(&mut unchanged, 0.0);
        assert_eq!(unchanged.iter().map(|r| r.id).collect::<Vec<_>>(), vec![2, 3, 1]);
    }

    #[test]
    fn a_previous_turn_outside_the_candidates_gets_nothing() {
        let mut ranked = vec![turn(5, 1.0, 4), turn(6, 0.5, 0)];
        lend_to_previous(&mut ranked, 0.5);
        assert_eq!(
            ranked.iter().map(|r| (r.id, r.relevance())).collect::<Vec<_>>(),
            vec![(5, 1.0), (6, 0.5)]
        );
    }
}
