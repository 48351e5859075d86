//! The cheap first pass: one Aho-Corasick scan per keyword kind tells which rules
//! can possibly match, so text with no candidate keyword is never given to a regex.
//! Ordinary chat text mostly stops here.

use super::rule::Rule;
use aho_corasick::AhoCorasick;

/// One bit per rule, by index in the compiled table (at most 128 rules).
pub(crate) type Mask = u128;

pub(crate) const MAX_RULES: usize = Mask::BITS as usize;

/// Keyword automata and, per keyword, the rules it gates.
pub(crate) struct Prefilter {
    folded: Keywords,
    exact: Keywords,
    /// Rules without keywords: they run on every text.
    always: Mask,
}

/// One keyword occurrence: `text[start..end]` gates `rules`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Hit {
    pub start: usize,
    pub end: usize,
    pub rules: Mask,
}

struct Keywords {
    automaton: Option<AhoCorasick>,
    /// `rules[i]` = the rules gated by pattern `i`.
    rules: Vec<Mask>,
    /// Every rule some pattern here gates.
    gates: Mask,
}

impl Keywords {
    fn build(entries: Vec<(String, Mask)>, case_insensitive: bool) -> Keywords {
        let automaton = (!entries.is_empty()).then(|| {
            AhoCorasick::builder()
                .ascii_case_insensitive(case_insensitive)
                .build(entries.iter().map(|(k, _)| k))
                .expect("static scrub keywords build an automaton")
        });
        let rules: Vec<Mask> = entries.into_iter().map(|(_, m)| m).collect();
        let gates = rules.iter().fold(0, |acc, m| acc | m);
        Keywords { automaton, rules, gates }
    }

    /// Every keyword occurrence in `text` with the rules it gates (among `enabled`).
    fn hits(&self, text: &str, enabled: Mask, out: &mut Vec<Hit>) {
        let Some(automaton) = &self.automaton else {
            return;
        };
        if enabled & self.gates == 0 {
            return;
        }
        for hit in automaton.find_overlapping_iter(text) {
            let rules = self.rules[hit.pattern().as_usize()] & enabled;
            if rules != 0 {
                out.push(Hit { start: hit.start(), end: hit.end(), rules });
            }
        }
    }

    /// Adds to `found` the rules whose keywords occur in `text`; stops early once
    /// every rule in `wanted` is found.
    fn scan(&self, text: &str, wanted: Mask, found: &mut Mask) {
        let Some(automaton) = &self.automaton else {
            return;
        };
        let wanted = wanted & self.gates;
        if *found & wanted == wanted {
            return;
        }
        // Overlapping search, so "password" still reports "pass" and "passw".
        for hit in automaton.find_overlapping_iter(text) {
            *found |= self.rules[hit.pattern().as_usize()];
            if *found & wanted == wanted {
                return;
            }
        }
    }
}

impl Prefilter {
    /// `rules.len()` must be at most [`MAX_RULES`].
    pub(crate) fn new(rules: &[&Rule]) -> Prefilter {
        let mut folded: Vec<(String, Mask)> = Vec::new();
        let mut exact: Vec<(String, Mask)> = Vec::new();
        let mut always = 0;
        for (i, rule) in rules.iter().enumerate() {
            let bit: Mask = 1 << i;
            if rule.keywords.is_empty() && rule.exact.is_empty() {
                always |= bit;
            }
            for k in rule.keywords {
                add(&mut folded, k.to_ascii_lowercase(), bit);
            }
            for k in rule.exact {
                add(&mut exact, (*k).to_owned(), bit);
            }
        }
        Prefilter { folded: Keywords::build(folded, true), exact: Keywords::build(exact, false), always }
    }

    /// The rules among `enabled` that may match somewhere in `text`.
    pub(crate) fn candidates(&self, text: &str, enabled: Mask) -> Mask {
        let mut found = self.always & enabled;
        self.exact.scan(text, enabled, &mut found);
        self.folded.scan(text, enabled, &mut found);
        found & enabled
    }

    /// Like `candidates`, but also returns every keyword occurrence, sorted by start,
    /// so long texts can be searched only around them. No early exit: slower.
    pub(crate) fn hits(&self, text: &str, enabled: Mask) -> (Mask, Vec<Hit>) {
        let mut hits = Vec::new();
        self.exact.hits(text, enabled, &mut hits);
        self.folded.hits(text, enabled, &mut hits);
        hits.sort_unstable_by_key(|h| h.start);
        let found = hits.iter().fold(self.always & enabled, |acc, h| acc | h.rules);
        (found, hits)
    }

    /// Rules that run on every text (no keywords).
    pub(crate) fn always(&self) -> Mask {
        self.always
    }
}

fn add(entries: &mut Vec<(String, Mask)>, keyword: String, bit: Mask) {
    match entries.iter_mut().find(|(k, _)| *k == keyword) {
        Some((_, mask)) => *mask |= bit,
        None => entries.push((keyword, bit)),
    }
}
