//! Whether an entry's own text holds a word of the query, with query and
//! content analysed as the index analyses them (`index::schema`), so that
//! "allergies" in an entry answers "allergy" in a query. The relevance floor
//! asks it of the hits it would otherwise have to trust to BM25 over the
//! previous turns, or to a session's boost.

use tantivy::tokenizer::TextAnalyzer;

use crate::entry::Entry;
use crate::index::schema::{analyzer, date_text, is_date_term, lowercase_words, terms, QUERY_STOPWORDS};

pub struct QueryWords {
    /// The analysed words that count most in the query: those that are not
    /// function words, or all of them in a query made only of function words
    /// (or one that counts function words fully).
    words: Vec<String>,
    /// The first character of each word: analysis keeps a word's first
    /// character (lowercased), so content with no word starting with one of
    /// these holds none of them and needs no analysis.
    firsts: Vec<char>,
    /// The words that can match an entry's date (numbers, month names).
    dates: Vec<String>,
    analyzer: TextAnalyzer,
}

impl QueryWords {
    /// `stopword_weight` as in `Retrieval`: function words count below other
    /// words unless it is 1.
    pub fn new(text: &str, stopword_weight: f32) -> Self {
        let mut lower = lowercase_words();
        let mut analyzer = analyzer();
        let mut weighed: Vec<(String, f32)> = Vec::new();
        for word in terms(&mut lower, text) {
            let weight = if QUERY_STOPWORDS.contains(&word.as_str()) { stopword_weight } else { 1.0 };
            for term in terms(&mut analyzer, &word) {
                match weighed.iter_mut().find(|(t, _)| *t == term) {
                    Some((_, w)) => *w = w.max(weight),
                    None => weighed.push((term, weight)),
                }
            }
        }
        let top = weighed.iter().map(|(_, w)| *w).fold(f32::NEG_INFINITY, f32::max);
        let words: Vec<String> = weighed.into_iter().filter(|(_, w)| *w == top).map(|(t, _)| t).collect();
        let mut firsts: Vec<char> = words.iter().filter_map(|w| w.chars().next()).collect();
        firsts.sort_unstable();
        firsts.dedup();
        let dates = words.iter().filter(|w| is_date_term(w)).cloned().collect();
        Self { words, firsts, dates, analyzer }
    }

    /// Whether `entry`'s content, or its date as words, holds one of the words.
    pub fn found_in(&mut self, entry: &Entry) -> bool {
        self.in_text(&entry.content)
            || (!self.dates.is_empty()
                && terms(&mut self.analyzer, &date_text(entry.timestamp)).iter().any(|t| self.dates.contains(t)))
    }

    fn in_text(&mut self, text: &str) -> bool {
        // The index's tokenizer splits on what is not alphanumeric.
        let maybe = text
            .split(|c: char| !c.is_alphanumeric())
            .filter_map(|word| word.chars().next())
            .any(|c| c.to_lowercase().any(|l| self.firsts.binary_search(&l).is_ok()));
        maybe && terms(&mut self.analyzer, text).iter().any(|t| self.words.contains(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(content: &str, timestamp: i64) -> Entry {
        Entry {
            id: 1,
            content: content.to_owned(),
            kind: "note".to_owned(),
            scope: None,
            session_id: None,
            metadata: None,
            timestamp,
            tokens: 1,
            expires_at: None,
            updated_at: None,
            risk_stamp: None,
        }
    }

    #[test]
    fn words_match_as_the_index_analyses_them() {
        let mut q = QueryWords::new("What about the peanuts allergy?", 0.3);
        assert!(q.found_in(&entry("Severe ALLERGIES to peanut butter", 0)));
        assert!(!q.found_in(&entry("Noted!", 0)));
        assert!(!q.found_in(&entry("ok, what about it?", 0)), "function words do not count");
        // Only function words: they are all the query has.
        let mut q = QueryWords::new("what was it", 0.3);
        assert!(q.found_in(&entry("it was fine", 0)) && !q.found_in(&entry("ok", 0)));
        // Counted fully, they are words like any other.
        assert!(QueryWords::new("the allergy", 1.0).found_in(&entry("the end", 0)));
    }

    #[test]
    fn a_date_word_matches_the_entry_date() {
        let may_8 = 1_683_554_160_000_000; // 2023-05-08
        let mut q = QueryWords::new("what happened on 8 May 2023", 0.3);
        assert!(q.found_in(&entry("ok", may_8)));
        assert!(!q.found_in(&entry("ok", 0)));
        assert!(!QueryWords::new("peanuts", 0.3).found_in(&entry("ok", may_8)));
    }

    #[test]
    fn the_first_character_shortcut_agrees_with_analysis() {
        let mut q = QueryWords::new("Éclair ıstanbul dying skies", 0.3);
        for text in ["ÉCLAIRS", "die", "the sky", "İstanbul", "x-ray éclair"] {
            let analysed = terms(&mut analyzer(), text).iter().any(|t| q.words.contains(t));
            assert_eq!(q.in_text(text), analysed, "{text}");
        }
    }
}
