//! Whether an entry's own text holds a word of the query, with query and
//! content analysed as the index analyses them (`index::schema`), so that
//! "allergies" in an entry answers "allergy" in a query. The relevance floor
//! asks it of the hits it would otherwise have to trust to BM25 over the
//! previous turns, or to a session's boost.

use std::collections::HashMap;

use tantivy::tokenizer::TextAnalyzer;

use crate::entry::Entry;
use crate::index::schema::{analyzer, date_text, is_date_term, lowercase_words, terms, QUERY_STOPWORDS};

pub struct QueryWords {
    /// The analysed words that count most in the query: those that are not
    /// function words, or all of them in a query made only of function words
    /// (or one that counts function words fully).
    words: Vec<String>,
    /// The first two bytes of each ASCII word (the whole word when shorter):
    /// an ASCII content word can only be analysed into one of the words if it
    /// begins with them, once lowercased (see `may_become`; "aing" becomes "a").
    prefixes: Vec<Vec<u8>>,
    /// Which bytes begin one of `prefixes`, lowercase.
    first: [bool; 256],
    /// The words that can match an entry's date (numbers, month names).
    dates: Vec<String>,
    /// Whether every term the index searches for is one of `words`.
    all_count: bool,
    analyzer: TextAnalyzer,
    /// Whether a lowercased ASCII word is analysed into one of `words`, for
    /// the words met so far: text repeats its words.
    seen: HashMap<String, bool>,
}

/// Words the English stemmer changes within their first two letters: the
/// Snowball algorithm (Porter2) otherwise only rewrites suffixes that start
/// at the third letter or later, so a stem keeps its word's first two letters.
const EXCEPTIONS: [&str; 3] = ["dying", "lying", "tying"];

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
        // The index leaves out terms of weight 0 (unless all are).
        let all_count = weighed.iter().all(|(_, w)| *w == top || *w <= 0.0);
        let words: Vec<String> = weighed.into_iter().filter(|(_, w)| *w == top).map(|(t, _)| t).collect();
        let mut prefixes: Vec<Vec<u8>> =
            words.iter().filter(|w| w.is_ascii()).map(|w| w.as_bytes()[..w.len().min(2)].to_vec()).collect();
        prefixes.sort_unstable();
        prefixes.dedup();
        let mut first = [false; 256];
        for p in &prefixes {
            first[usize::from(p[0])] = true;
        }
        let dates = words.iter().filter(|w| is_date_term(w)).cloned().collect();
        Self { words, prefixes, first, dates, all_count, analyzer, seen: HashMap::new() }
    }

    /// Whether any BM25 match on an entry's content alone is a match on one of
    /// the words: every term the query searches is one, and none can match
    /// the date field.
    pub fn every_content_match_counts(&self) -> bool {
        self.all_count && self.dates.is_empty()
    }

    /// Whether `entry`'s content, or its date as words, holds one of the words.
    pub fn found_in(&mut self, entry: &Entry) -> bool {
        self.in_text(&entry.content)
            || (!self.dates.is_empty()
                && terms(&mut self.analyzer, &date_text(entry.timestamp))
                    .iter()
                    .any(|t| self.dates.contains(t)))
    }

    /// Each word of `text` (split where the index's tokenizer splits: at what
    /// is not alphanumeric) is analysed only if it may become a query word, and
    /// an ASCII word once per query.
    fn in_text(&mut self, text: &str) -> bool {
        let mut lower = String::new();
        if text.is_ascii() {
            // The same split, byte by byte.
            let bytes = text.as_bytes();
            let mut at = 0;
            while at < bytes.len() {
                let start = at;
                while at < bytes.len() && bytes[at].is_ascii_alphanumeric() {
                    at += 1;
                }
                if at > start && self.holds_ascii(&bytes[start..at], &mut lower) {
                    return true;
                }
                at += 1;
            }
            false
        } else {
            text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).any(|word| {
                if word.is_ascii() {
                    self.holds_ascii(word.as_bytes(), &mut lower)
                } else {
                    self.analysed(word)
                }
            })
        }
    }

    /// Whether an ASCII word is analysed into a query word.
    fn holds_ascii(&mut self, word: &[u8], lower: &mut String) -> bool {
        if !self.may_become(word) {
            return false;
        }
        lower.clear();
        lower.extend(word.iter().map(|b| char::from(b.to_ascii_lowercase())));
        if let Some(&found) = self.seen.get(lower.as_str()) {
            return found;
        }
        let found = self.analysed(lower);
        self.seen.insert(lower.clone(), found);
        found
    }

    fn analysed(&mut self, word: &str) -> bool {
        terms(&mut self.analyzer, word).iter().any(|t| self.words.contains(t))
    }

    /// Whether an ASCII word's analysis may be a query word: it begins
    /// (lowercased) with an ASCII query word's first two bytes (its only byte,
    /// for a one-letter query word), or the stemmer rewrites its first two.
    fn may_become(&self, word: &[u8]) -> bool {
        if !self.first[usize::from(word[0].to_ascii_lowercase())] {
            return word.len() == 5 && EXCEPTIONS.iter().any(|e| word.eq_ignore_ascii_case(e.as_bytes()));
        }
        let head = [word[0].to_ascii_lowercase(), word.get(1).map_or(0, u8::to_ascii_lowercase)];
        let head = &head[..word.len().min(2)];
        self.prefixes.iter().any(|p| head.starts_with(p))
            || (word.len() == 5 && EXCEPTIONS.iter().any(|e| word.eq_ignore_ascii_case(e.as_bytes())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::any;

    fn entry(content: &str, timestamp: i64) -> Entry {
        Entry { timestamp, ..crate::entry::sample(1, content) }
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
    fn whether_every_content_match_is_on_a_word() {
        assert!(QueryWords::new("peanuts allergy", 0.3).every_content_match_counts());
        assert!(!QueryWords::new("what about the peanuts", 0.3).every_content_match_counts());
        // Dropped function words are not searched at all.
        assert!(QueryWords::new("what about the peanuts", 0.0).every_content_match_counts());
        assert!(QueryWords::new("what about the", 0.3).every_content_match_counts());
        assert!(!QueryWords::new("peanuts in may", 0.3).every_content_match_counts());
    }

    #[test]
    fn a_date_word_matches_the_entry_date() {
        let may_8 = 1_683_554_160_000_000; // 2023-05-08
        let mut q = QueryWords::new("what happened on 8 May 2023", 0.3);
        assert!(q.found_in(&entry("ok", may_8)));
        assert!(!q.found_in(&entry("ok", 0)));
        assert!(!QueryWords::new("peanuts", 0.3).found_in(&entry("ok", may_8)));
    }

    fn analysed_holds(q: &QueryWords, text: &str) -> bool {
        terms(&mut analyzer(), text).iter().any(|t| q.words.contains(t))
    }

    #[test]
    fn the_shortcut_agrees_with_analysis_on_words_the_stemmer_rewrites_early() {
        let query = "Éclair ıstanbul die sky tie lie cri ski by is a i";
        let mut q = QueryWords::new(query, 1.0);
        for text in [
            "ÉCLAIRS",
            "dying",
            "LYING",
            "tying",
            "the skies",
            "skis",
            "cry",
            "cries",
            "İstanbul",
            "x-ray éclair",
            "BY",
            "is",
            "A",
            "I",
            "as",
            "ties",
            "lies",
            "dyeing",
            "skying",
        ] {
            assert_eq!(q.in_text(text), analysed_holds(&q, text), "{text}");
        }
        // The analyzer drops words of 40 bytes or more, in queries and content.
        let (kept, dropped) = (format!("runn{}", "e".repeat(35)), format!("runn{}", "e".repeat(36)));
        let mut q = QueryWords::new(&format!("{kept} {dropped}"), 0.3);
        assert!(q.in_text(&kept.to_uppercase()) && analysed_holds(&q, &kept));
        assert!(!q.in_text(&dropped) && !analysed_holds(&q, &dropped));
    }

    proptest::proptest! {
        /// Texts made of the query's words cut short and given English endings,
        /// in any case: where the stemmer's rewrites are.
        #[test]
        fn the_shortcut_agrees_with_analysis(
            query in proptest::collection::vec("[a-z]{1,9}", 1..4),
            cuts in proptest::collection::vec((0usize..4, 0usize..12, any::<bool>()), 0..8),
            noise in "[a-zA-Z0-9 ,.'-]{0,30}",
        ) {
            const ENDINGS: [&str; 12] = ["", "s", "es", "ies", "ied", "ing", "ed", "ly", "y", "ying", "e", "ness"];
            let mut text = noise;
            for (word, ending, upper) in cuts {
                let base = &query[word % query.len()];
                let cut = &base[..base.len().saturating_sub(word % 3)];
                let w = format!(" {cut}{}", ENDINGS[ending]);
                text.push_str(&if upper { w.to_uppercase() } else { w });
            }
            let mut q = QueryWords::new(&query.join(" "), 0.3);
            proptest::prop_assert_eq!(q.in_text(&text), analysed_holds(&q, &text));
        }
    }
}
