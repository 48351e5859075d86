//! A session vouches for its turns: each candidate gains a share of the best
//! relevance among the candidates of its session. An answer often sits in a
//! turn that shares few words with the question, a few turns away from the
//! one that matches it best; the strong match lifts its whole session.

use std::collections::HashMap;

use super::Ranked;

/// The best relevance per session key among `ranked` (entries without a
/// session left out). Taken before replies lend, so the boost is of each
/// session's own relevance.
pub fn session_best(ranked: &[Ranked]) -> HashMap<u64, f32> {
    let mut best: HashMap<u64, f32> = HashMap::new();
    for r in ranked.iter().filter(|r| r.session != 0) {
        let b = best.entry(r.session).or_insert(0.0);
        *b = b.max(r.relevance());
    }
    best
}

/// Adds `weight` x its session's best (from `session_best`) to each
/// candidate's relevance, then re-sorts best first. An entry without a session
/// is a session of its own, so a note saved outside any conversation is not
/// outranked by weaker chat turns merely for having no session. Scores stay
/// `relevance * recency`.
pub fn boost_sessions(ranked: &mut [Ranked], best: &HashMap<u64, f32>, weight: f32) {
    if weight <= 0.0 {
        return;
    }
    for r in ranked.iter_mut() {
        let own = r.relevance();
        let b = best.get(&r.session).copied().unwrap_or(own);
        r.score = (own + weight * b) * r.recency;
    }
    if !best.is_empty() {
        ranked.sort_by(|a, b| b.score.total_cmp(&a.score).then(b.id.cmp(&a.id)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(id: i64, relevance: f32, session: u64) -> Ranked {
        Ranked { id, score: relevance * 2.0, recency: 2.0, bm25: relevance, session, ..Ranked::default() }
    }

    fn ids(r: &[Ranked]) -> Vec<i64> {
        r.iter().map(|r| r.id).collect()
    }

    #[test]
    fn a_strong_turn_lifts_its_session() {
        // 1 matches best; 2 shares its session, 3 is as weak in another one.
        let mut ranked = vec![turn(1, 1.0, 7), turn(3, 0.31, 8), turn(2, 0.3, 7)];
        let best = session_best(&ranked);
        boost_sessions(&mut ranked, &best, 0.5);
        assert_eq!(ids(&ranked), vec![1, 2, 3]);
        assert!((ranked[0].relevance() - 1.5).abs() < 1e-6);
        assert!((ranked[1].relevance() - 0.8).abs() < 1e-6);
        assert!((ranked[2].relevance() - 0.31 * 1.5).abs() < 1e-6);
    }

    #[test]
    fn no_weight_changes_nothing_and_no_session_is_a_session_of_its_own() {
        let ranked = vec![turn(1, 1.0, 7), turn(3, 0.31, 0), turn(2, 0.3, 0)];
        let mut r = ranked.clone();
        boost_sessions(&mut r, &session_best(&ranked), 0.0);
        assert_eq!(ids(&r), vec![1, 3, 2]);
        assert!((r[1].relevance() - 0.31).abs() < 1e-6);
        // At 0.5 an entry without a session gains half its own relevance, like
        // the only turn of a session would.
        let mut r = ranked.clone();
        boost_sessions(&mut r, &session_best(&ranked), 0.5);
        assert_eq!(ids(&r), vec![1, 3, 2]);
        assert!((r[1].relevance() - 0.31 * 1.5).abs() < 1e-6);
    }

    #[test]
    fn a_note_without_a_session_keeps_its_place_above_weaker_turns() {
        let ranked = vec![turn(1, 1.0, 0), turn(2, 0.7, 7)];
        let mut r = ranked.clone();
        boost_sessions(&mut r, &session_best(&ranked), 0.5);
        assert_eq!(ids(&r), vec![1, 2]);
    }
}
