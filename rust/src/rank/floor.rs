//! The relevance floor: a candidate is returned only when it is relevant
//! enough of its own, however much its session and neighbouring turns lend
//! it. Without it, a "Noted!" or "ok" that follows a strong turn in the same
//! session rides on that turn's words (BM25 over the previous turns, the
//! session boost) into the answer to a query it says nothing about.
//!
//! A candidate's own relevance is its relevance as ranked (replies and its
//! session included) when its content or date holds a word of the query, and
//! otherwise only what its vector scored (0 in a lexical query): the boosts
//! rank evidence, they do not make it. It must reach `absolute`, and
//! `relative` times the best candidate's relevance. A candidate below the
//! floor is still returned when it is the immediate reply to one that clears
//! it: "yes", "no" or "hunter2" answer the turn before them.

use std::collections::HashMap;

use super::{QueryWords, Ranked};
use crate::entry::Entry;
use crate::error::Result;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Floor {
    pub absolute: f32,
    /// A share of the best candidate's relevance, from 0 to 1.
    pub relative: f32,
}

impl Floor {
    /// Whether the floor lets everything through.
    pub fn is_off(&self) -> bool {
        self.absolute <= 0.0 && self.relative <= 0.0
    }
}

/// Decides, batch by batch as packing fetches the entries, which candidates
/// the floor lets through.
pub struct Judge<'a> {
    /// The own relevance a candidate needs.
    threshold: f32,
    words: QueryWords,
    ranked: HashMap<i64, &'a Ranked>,
    /// Whether a candidate clears the floor on its own, by id, once known.
    clears: HashMap<i64, bool>,
}

impl<'a> Judge<'a> {
    pub fn new(floor: Floor, words: QueryWords, ranked: &'a [Ranked]) -> Self {
        let best = ranked.iter().map(Ranked::relevance).fold(0.0f32, f32::max);
        Self {
            threshold: floor.absolute.max(floor.relative * best),
            words,
            ranked: ranked.iter().map(|r| (r.id, r)).collect(),
            clears: HashMap::new(),
        }
    }

    /// Whether each of `entries` (candidates, `None` for one that is gone) is
    /// let through. `lookup` fetches previous turns that are not among them,
    /// when a reply's fate depends on one.
    pub fn admit(
        &mut self,
        entries: &[Option<Entry>],
        lookup: impl FnOnce(&[i64]) -> Result<Vec<Option<Entry>>>,
    ) -> Result<Vec<bool>> {
        let own: Vec<bool> =
            entries.iter().map(|e| e.as_ref().is_some_and(|e| self.clears_alone(e))).collect();
        let mut wanted: Vec<i64> = Vec::new();
        for (entry, &own) in entries.iter().zip(&own) {
            if let (Some(entry), false) = (entry, own) {
                if let Some(prev) = self.previous(entry.id) {
                    if !self.clears.contains_key(&prev) && !wanted.contains(&prev) {
                        wanted.push(prev);
                    }
                }
            }
        }
        if !wanted.is_empty() {
            for (id, entry) in wanted.iter().zip(lookup(&wanted)?) {
                let clears = entry.is_some_and(|e| self.clears_alone(&e));
                self.clears.insert(*id, clears);
            }
        }
        Ok(entries
            .iter()
            .zip(own)
            .map(|(entry, own)| {
                own || entry.as_ref().and_then(|e| self.previous(e.id)).is_some_and(|p| self.clears[&p])
            })
            .collect())
    }

    /// The previous turn of candidate `id`, when it is a candidate that may
    /// clear the floor.
    fn previous(&self, id: i64) -> Option<i64> {
        let prev = self.ranked.get(&id)?.prev;
        let r = self.ranked.get(&prev).filter(|_| prev != 0)?;
        (r.relevance() >= self.threshold).then_some(prev)
    }

    fn clears_alone(&mut self, entry: &Entry) -> bool {
        if let Some(&known) = self.clears.get(&entry.id) {
            return known;
        }
        // Not a candidate: nothing to judge it by.
        let Some(r) = self.ranked.get(&entry.id) else { return true };
        let clears = if r.relevance() < self.threshold {
            false
        } else if r.dense_share >= self.threshold {
            true
        } else if r.prev == 0 && r.bm25 > 0.0 && self.words.every_content_match_counts() {
            // No previous turn, so nothing in its context field: its BM25 is
            // all its content's, on words that count.
            true
        } else {
            self.words.found_in(entry)
        };
        self.clears.insert(entry.id, clears);
        clears
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(id: i64, base: f32, prev: i64) -> Ranked {
        Ranked { id, score: base, recency: 1.0, bm25: base, prev, ..Ranked::default() }
    }

    fn entry(id: i64, content: &str) -> Entry {
        crate::entry::sample(id, content)
    }

    const FLOOR: Floor = Floor { absolute: 0.0, relative: 0.2 };

    fn judge<'a>(ranked: &'a [Ranked], floor: Floor) -> Judge<'a> {
        Judge::new(floor, QueryWords::new("peanuts allergy", 0.3), ranked)
    }

    fn none(_: &[i64]) -> Result<Vec<Option<Entry>>> {
        panic!("nothing to look up")
    }

    #[test]
    fn filler_without_a_query_word_stays_out_however_it_ranks() {
        // 2 and 4 rank on the words of the turns before them (not candidates).
        let ranked = [turn(1, 3.0, 0), turn(2, 1.0, 9), turn(3, 0.2, 0), turn(4, 0.9, 8)];
        let entries = ["I have a peanut allergy", "Noted!", "peanuts", "ok"]
            .iter()
            .zip(1..)
            .map(|(text, id)| Some(entry(id, text)))
            .collect::<Vec<_>>();
        let mut j = judge(&ranked, FLOOR);
        // 3 holds a word but scores below a fifth of the best; 4 holds none.
        assert_eq!(j.admit(&entries, none).unwrap(), vec![true, false, false, false]);
        let mut j = judge(&ranked, Floor { absolute: 0.0, relative: 0.0 });
        assert_eq!(j.admit(&entries, none).unwrap(), vec![true, true, true, true]);
        let mut j = judge(&ranked, Floor { absolute: 2.5, relative: 0.0 });
        assert_eq!(j.admit(&entries, none).unwrap(), vec![true, false, false, false]);
        assert!(j.admit(&[None], none).unwrap() == vec![false]);
    }

    #[test]
    fn the_immediate_reply_to_a_hit_that_clears_the_floor_comes_with_it() {
        // 2 replies to 1, which clears the floor; 4 replies to 3, which does not;
        // 6 replies to 5, fetched only when needed.
        let ranked = [
            turn(1, 3.0, 0),
            turn(2, 1.0, 1),
            turn(3, 2.0, 9),
            turn(4, 1.0, 3),
            turn(5, 2.0, 0),
            turn(6, 1.0, 5),
        ];
        let mut j = judge(&ranked, FLOOR);
        let batch = [
            Some(entry(2, "Noted!")),
            Some(entry(1, "I have a peanut allergy")),
            Some(entry(4, "ok")),
            Some(entry(3, "what is for dinner")),
            Some(entry(6, "sure")),
        ];
        let mut asked = Vec::new();
        let got = j
            .admit(&batch, |ids| {
                asked.extend_from_slice(ids);
                Ok(vec![Some(entry(5, "peanuts again"))])
            })
            .unwrap();
        assert_eq!(got, vec![true, true, false, false, true]);
        assert_eq!(asked, vec![5], "only the one previous turn outside the batch");
    }

    #[test]
    fn without_a_previous_turn_a_bm25_match_is_on_the_content() {
        // Nothing in 7's context field, so its BM25 must be its content's: the
        // content is not read (this one would fail the word check).
        let ranked = [turn(1, 3.0, 0), turn(7, 2.0, 0), turn(8, 2.0, 9)];
        let mut j = judge(&ranked, FLOOR);
        let got = j.admit(&[Some(entry(7, "ok")), Some(entry(8, "ok"))], none).unwrap();
        assert_eq!(got, vec![true, false]);
        // A query with function words cannot tell: their matches do not count.
        let mut j = Judge::new(FLOOR, QueryWords::new("the peanuts", 0.3), &ranked);
        assert_eq!(j.admit(&[Some(entry(7, "the end"))], none).unwrap(), vec![false]);
    }

    #[test]
    fn a_dense_match_is_relevant_of_its_own() {
        let mut dense = turn(2, 1.0, 0);
        dense.dense_share = 0.9;
        let ranked = [turn(1, 3.0, 0), dense];
        let mut j = judge(&ranked, FLOOR);
        let got = j.admit(&[Some(entry(2, "nut-free kitchen"))], none).unwrap();
        assert_eq!(got, vec![true]);
    }
}
