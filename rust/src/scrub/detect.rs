//! Compiles the rule tables once and turns a text into non-overlapping findings:
//! prefilter, then each candidate rule's regex and check, then overlap resolution.

use super::fold::fold;
use super::prefilter::{Mask, Prefilter, MAX_RULES};
use super::redact::{mask, placeholder_spans, OPEN};
use super::rule::{Check, Class, Rule, Tail, Verdict};
use super::window::{windows, Lines, WHOLE_TEXT_MAX};
use super::{assignment, commands, entropy, known, patterns, pii, prose, Finding};
use regex::{Regex, RegexBuilder};
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::OnceLock;

pub(crate) struct Detector {
    rules: Vec<Compiled>,
    prefilter: Prefilter,
    secrets: Mask,
    pii: Mask,
}

struct Compiled {
    label: &'static str,
    priority: u8,
    regex: Regex,
    /// Capture groups that may hold the secret, in order of preference.
    secret_groups: Vec<usize>,
    check: Option<Check>,
    tail: Option<Tail>,
    multiline: bool,
    relabel: bool,
}

#[cfg(test)]
thread_local! {
    /// Characters this thread handed to rule checks: what a text costs beyond
    /// the regex scans, for the test that bounds it.
    static CHECKED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A finding before overlaps are resolved.
struct Candidate {
    finding: Finding,
    priority: u8,
    rule: usize,
}

/// The compiled tables, built on first use and shared by every `Scrubber`.
pub(crate) fn detector() -> &'static Detector {
    static DETECTOR: OnceLock<Detector> = OnceLock::new();
    DETECTOR.get_or_init(Detector::build)
}

impl Detector {
    fn build() -> Detector {
        let rules = all_rules();
        assert!(rules.len() <= MAX_RULES, "more scrub rules than mask bits");
        let mut secrets = 0;
        let mut pii = 0;
        for (i, rule) in rules.iter().enumerate() {
            match rule.class {
                Class::Secret => secrets |= 1 << i,
                Class::Pii => pii |= 1 << i,
            }
        }
        Detector {
            prefilter: Prefilter::new(&rules),
            rules: rules.iter().map(|r| compile(r)).collect(),
            secrets,
            pii,
        }
    }

    pub(crate) fn mask_for(&self, secrets: bool, pii: bool) -> Mask {
        (if secrets { self.secrets } else { 0 }) | (if pii { self.pii } else { 0 })
    }

    /// Distinct labels of the rules in `enabled`, in table order.
    pub(crate) fn labels(&self, enabled: Mask) -> Vec<&'static str> {
        let mut labels: Vec<&'static str> = Vec::new();
        for (i, rule) in self.rules.iter().enumerate() {
            if enabled & (1 << i) != 0 && !rule.relabel && !labels.contains(&rule.label) {
                labels.push(rule.label);
            }
        }
        labels
    }

    /// Findings of the rules in `enabled`, sorted by start and not overlapping.
    /// Existing placeholders never take part in a finding. Rules match on the folded
    /// view of the text (`fold.rs`); findings are spans of `text` itself.
    pub(crate) fn findings(&self, text: &str, enabled: Mask) -> Vec<Finding> {
        let Some(view) = fold(text) else {
            return self.findings_in(text, enabled);
        };
        let mut out: Vec<Finding> = Vec::new();
        for f in self.findings_in(&view.text, enabled) {
            let mut start = view.orig_start(f.start);
            let end = view.orig_end(f.end);
            // Two findings that end and start inside one folded character meet
            // there; the later one starts after the earlier.
            if let Some(last) = out.last() {
                start = start.max(last.end);
            }
            if start < end {
                out.push(Finding { label: f.label, start, end });
            }
        }
        out
    }

    fn findings_in(&self, text: &str, enabled: Mask) -> Vec<Finding> {
        let mut candidates = self.prefilter.candidates(text, enabled);
        if candidates == 0 {
            return Vec::new();
        }
        let blocked = if text.contains(OPEN) { placeholder_spans(text) } else { Vec::new() };
        let masked;
        let haystack = if blocked.is_empty() {
            text
        } else {
            masked = mask(text, &blocked);
            candidates = self.prefilter.candidates(&masked, enabled);
            masked.as_str()
        };
        let mut found = Vec::new();
        if haystack.len() <= WHOLE_TEXT_MAX {
            for (i, rule) in self.rules.iter().enumerate() {
                if candidates & (1 << i) != 0 {
                    rule.run(i, haystack, 0..haystack.len(), &blocked, &mut found);
                }
            }
        } else {
            self.run_windowed(haystack, enabled, &blocked, &mut found);
        }
        resolve(found)
    }

    /// Long texts: rules with keywords run only around their keyword hits.
    fn run_windowed(
        &self,
        haystack: &str,
        enabled: Mask,
        blocked: &[(usize, usize)],
        out: &mut Vec<Candidate>,
    ) {
        let (candidates, hits) = self.prefilter.hits(haystack, enabled);
        let always = self.prefilter.always();
        let lines = Lines::new(haystack);
        for (i, rule) in self.rules.iter().enumerate() {
            let bit: Mask = 1 << i;
            if candidates & bit == 0 {
                continue;
            }
            if rule.multiline || always & bit != 0 {
                rule.run(i, haystack, 0..haystack.len(), blocked, out);
                continue;
            }
            let near = hits.iter().filter(|h| h.rules & bit != 0).map(|h| (h.start, h.end));
            for (start, end) in windows(haystack, &lines, near) {
                rule.run(i, haystack, start..end, blocked, out);
            }
        }
    }
}

/// Every rule, in mask order.
fn all_rules() -> Vec<&'static Rule> {
    patterns::RULES
        .iter()
        .chain(known::RULES)
        .chain(commands::RULES)
        .chain(assignment::RULES)
        .chain(prose::RULES)
        .chain(entropy::RULES)
        .chain(pii::RULES)
        .collect()
}

/// The pattern as compiled. ASCII word boundaries: secrets are ASCII, and the
/// Unicode `\b` makes the lazy DFA give up on non-ASCII text (much slower
/// fallback engines).
fn pattern(rule: &Rule) -> String {
    rule.pattern.replace(r"\b", r"(?-u:\b)")
}

fn compile(rule: &Rule) -> Compiled {
    let regex = RegexBuilder::new(&pattern(rule))
        .size_limit(4 << 20)
        .build()
        .unwrap_or_else(|e| panic!("scrub rule {} does not compile: {e}", rule.label));
    let secret_groups = regex
        .capture_names()
        .enumerate()
        .filter(|(_, name)| name.is_some_and(|n| n.starts_with('s') && n.len() == 2))
        .map(|(i, _)| i)
        .collect();
    Compiled {
        label: rule.label,
        priority: rule.priority,
        regex,
        secret_groups,
        check: rule.check,
        tail: rule.tail,
        multiline: rule.multiline,
        relabel: rule.relabel,
    }
}

impl Compiled {
    /// Runs the rule on `haystack[range]` (`range` on line boundaries, see `window.rs`)
    /// and pushes candidates in `haystack` offsets.
    fn run(
        &self,
        index: usize,
        haystack: &str,
        range: Range<usize>,
        blocked: &[(usize, usize)],
        out: &mut Vec<Candidate>,
    ) {
        let base = range.start;
        let text = &haystack[range];
        let mut at = 0;
        while at <= text.len() {
            let Some(caps) = self.regex.captures_at(text, at) else {
                break;
            };
            let Some(whole) = caps.get(0) else {
                break;
            };
            let found = self.secret_groups.iter().find_map(|&g| caps.get(g)).unwrap_or(whole);
            let (secret_start, mut secret_end, mut whole_end) = (found.start(), found.end(), whole.end());
            if let Some(tail) = self.tail.filter(|_| found.end() == whole.end()) {
                secret_end = tail.extend(text, secret_start, secret_end);
                whole_end = secret_end;
            }
            let secret = &text[secret_start..secret_end];
            #[cfg(test)]
            CHECKED.with(|c| c.set(c.get() + secret.len()));
            // `blocked` is sorted and disjoint, so its ends are sorted too: one
            // binary search finds the only span that can overlap (linear scans made
            // secret-dense texts quadratic).
            let (start, stop) = (base + whole.start(), base + whole_end);
            let first = blocked.partition_point(|&(_, e)| e <= start);
            let touches_placeholder = blocked.get(first).is_some_and(|&(s, _)| s < stop);
            let verdict = match self.check {
                _ if touches_placeholder => Verdict::Reject,
                Some(check) => check(&caps, secret),
                None => Verdict::Accept,
            };
            let trim = |n: usize| secret_start + n.clamp(1, secret.len().max(1));
            let (end, label) = match verdict {
                Verdict::Reject => {
                    // Another match may start inside this one: `key` in a rejected
                    // `monkey = ...` must not hide the `api_key=...` right after it.
                    at = next_char(text, whole.start());
                    continue;
                }
                Verdict::Accept => (secret_end, self.label),
                Verdict::Trim(n) => (trim(n), self.label),
                Verdict::As(label, n) => (trim(n), label),
            };
            if end > secret_start && text.is_char_boundary(end) {
                out.push(Candidate {
                    finding: Finding { label, start: base + secret_start, end: base + end },
                    priority: self.priority,
                    rule: index,
                });
            }
            // Resume after the secret, not the whole match: some patterns consume the
            // delimiter after a token, which may be the delimiter before the next one.
            at = ceil_char(text, end.max(next_char(text, whole.start())));
        }
    }
}

/// The byte offset of the character after the one at `i` (or `len + 1` at the end).
fn next_char(s: &str, i: usize) -> usize {
    s[i..].chars().next().map_or(s.len() + 1, |c| i + c.len_utf8())
}

/// The first char boundary at or after `i` (or `i` itself past the end).
fn ceil_char(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Keeps the most trusted findings: by priority, then length, then position; any
/// candidate overlapping a kept one is dropped. Returns them sorted by start.
fn resolve(mut candidates: Vec<Candidate>) -> Vec<Finding> {
    candidates.sort_by(|a, b| {
        let len = |c: &Candidate| c.finding.end - c.finding.start;
        b.priority
            .cmp(&a.priority)
            .then(len(b).cmp(&len(a)))
            .then(a.finding.start.cmp(&b.finding.start))
            .then(a.rule.cmp(&b.rule))
    });
    // Keyed by start: checking the neighbours and inserting stay logarithmic.
    let mut kept: BTreeMap<usize, Finding> = BTreeMap::new();
    for c in candidates {
        let f = c.finding;
        let clear_before = kept.range(..f.start).next_back().is_none_or(|(_, k)| k.end <= f.start);
        let clear_after = kept.range(f.start..).next().is_none_or(|(_, k)| f.end <= k.start);
        if clear_before && clear_after {
            kept.insert(f.start, f);
        }
    }
    kept.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(label: &'static str, start: usize, end: usize, priority: u8) -> Candidate {
        Candidate { finding: Finding { label, start, end }, priority, rule: 0 }
    }

    #[test]
    fn overlaps_keep_the_higher_priority_then_the_longer() {
        let kept = resolve(vec![
            cand("generic", 0, 10, 1),
            cand("github", 2, 8, 5),
            cand("short", 12, 14, 1),
            cand("long", 11, 20, 1),
        ]);
        let labels: Vec<_> = kept.iter().map(|f| f.label).collect();
        assert_eq!(labels, ["github", "long"]);
    }

    /// The tables are compiled once per process and searched from several
    /// threads, each with a search cache sized by the automaton. A long
    /// repetition bound multiplies a rule's automaton (`rule::Tail`):
    /// three rules bounded at 127 to 4,096 characters made 3.3 of the tables'
    /// 6.8 MB compiled, and their search caches grew with them. (The largest
    /// left, `url_credentials` at 0.9 MB, searched URLs about 8% slower
    /// unbounded, so it keeps its bounds.)
    #[test]
    fn every_rule_compiles_small() {
        let mut total = 0;
        for rule in all_rules() {
            let size = regex_automata::meta::Regex::new(&pattern(rule)).unwrap().memory_usage();
            assert!(size <= 1 << 20, "{} compiles to {size} bytes", rule.label);
            total += size;
        }
        assert!(total <= 4 << 20, "the rules compile to {total} bytes");
    }

    /// Findings of one compiled rule on `text`, as (label, start, end).
    fn found(rule: &Compiled, text: &str) -> Vec<(&'static str, usize, usize)> {
        let mut out = Vec::new();
        rule.run(0, text, 0..text.len(), &[], &mut out);
        out.iter().map(|c| (c.finding.label, c.finding.start, c.finding.end)).collect()
    }

    /// splitmix64 over `alphabet`: deterministic values without a dependency.
    fn value(seed: &mut u64, alphabet: &[char], len: usize) -> String {
        (0..len)
            .map(|_| {
                *seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = *seed;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                alphabet[((z ^ (z >> 31)) % alphabet.len() as u64) as usize]
            })
            .collect()
    }

    /// Three rules moved their long repetition bounds out of the pattern: one
    /// into its check, two into a `Tail`. Compiled with the old bounded patterns
    /// (and no tail), they find exactly the same spans on values around and past
    /// every bound.
    #[test]
    fn bounds_checked_in_code_find_what_the_bounded_patterns_found() {
        let base62: Vec<char> = ('a'..='z').chain('A'..='Z').chain('0'..='9').collect();
        let mut wide = base62.clone();
        wide.extend(['é', '\u{212A}', '@', ':', '.', '%', '!', '-']);
        let mut seed = 7u64;
        let lengths = [1, 3, 4, 19, 20, 21, 60, 127, 128, 129, 255, 256, 257, 300, 4095, 4096, 4097, 5000];
        let mut values = Vec::new();
        for &len in &lengths {
            values.push(value(&mut seed, &base62, len));
            values.push(value(&mut seed, &wide, len));
            for at in [len / 2, len.saturating_sub(3)] {
                let mut v: Vec<char> = value(&mut seed, &base62, len).chars().collect();
                if at < v.len() {
                    v[at] = '@';
                    if at + 1 < v.len() {
                        v[at + 1] = 'h';
                    }
                }
                values.push(v.into_iter().collect());
            }
        }
        // (label, [(new pattern fragment, old bounded one)], texts around a value)
        type Case = (&'static str, &'static [(&'static str, &'static str)], fn(&str) -> Vec<String>);
        let cases: [Case; 3] = [
            ("generic_secret", &[("{20})", "{20,4096})")], |v| {
                vec![format!("api_key = {v}"), format!("the token is {v} ok"), format!("auth: '{v}'")]
            }),
            ("xml_element", &[(r"(?P<s1>[^<>\s]+)", r"(?P<s1>[^<>\s]{1,256})")], |v| {
                vec![format!("<password>{v}</password>"), format!("<apiKey> {v} </apiKey> <a>{v}</b>")]
            }),
            ("password_assignment", &[(r#"[^\s"'`]{3})"#, r#"[^\s"'`]{3,127})"#)], |v| {
                vec![format!("login with admin / S3cure!{v}"), format!("creds: root:P4ss!{v}. done")]
            }),
        ];
        for (label, edits, texts) in cases {
            let rules: Vec<&Rule> = all_rules()
                .into_iter()
                .filter(|r| r.label == label && edits.iter().all(|(new, _)| r.pattern.contains(new)))
                .collect();
            assert_eq!(rules.len(), 1, "{label}");
            let rule = rules[0];
            let old = edits.iter().fold(rule.pattern.to_owned(), |p, (new, old)| p.replacen(new, old, 1));
            let bounded = compile(&Rule { pattern: Box::leak(old.into_boxed_str()), tail: None, ..*rule });
            let unbounded = compile(rule);
            let mut matched = 0;
            for v in &values {
                for text in texts(v) {
                    let expected = found(&bounded, &text);
                    matched += usize::from(!expected.is_empty());
                    assert_eq!(found(&unbounded, &text), expected, "{label} on {text:?}");
                }
            }
            assert!(matched >= 10, "{label}: only {matched} texts had a finding");
        }
    }

    /// A text that repeats a keyword and its glue makes attempts of a rule at
    /// every repetition, and each attempt reads its secret. With every secret
    /// bounded (a `Tail`'s at most 4,096 characters) that work grows with the
    /// text, not with its square: the password after "pw=", which took the
    /// whole run, read about a sixth of the text's square (10,000 characters
    /// per character of these texts).
    #[test]
    fn repeated_keywords_cost_work_in_proportion_to_the_text() {
        let detector = detector();
        let all = detector.mask_for(true, true);
        for unit in ["pw=", "password: ", "login:a:", "key=", "api_key=a1", "subscription-key="] {
            let text = unit.repeat(60_000 / unit.len());
            CHECKED.with(|c| c.set(0));
            let _ = detector.findings(&text, all);
            let work = CHECKED.with(std::cell::Cell::get);
            assert!(work <= 4096 * text.len(), "{unit:?}: {work} characters checked in {}", text.len());
        }
    }

    #[test]
    fn every_rule_compiles_and_fits_the_mask() {
        let detector = detector();
        assert!(detector.rules.len() <= MAX_RULES);
        for rule in &detector.rules {
            assert!(
                rule.label.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "{}",
                rule.label
            );
        }
    }
}
