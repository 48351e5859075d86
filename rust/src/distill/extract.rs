//! The offline extractive distiller: picks salient sentences of a transcript as
//! facts and a few central ones as a summary, with no model. See the module docs
//! of [`crate::distill`] for what it can and cannot do.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::OnceLock;

use regex::Regex;

use super::chunk::{label, render};
use super::text;
use super::Message;
use crate::tokens::TokenCounter;

/// What a fact records. The names are the strings stored in entry metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FactKind {
    /// Something chosen or agreed: "we decided to ship on Friday".
    Decision,
    /// Something earlier said is put right: "actually, it's port 8080".
    Correction,
    /// A like, dislike or standing rule: "I prefer short answers".
    Preference,
    /// How things are now, or a dated change or plan: "she moved to Berlin".
    State,
    /// Anything else worth keeping.
    Fact,
}

impl FactKind {
    pub const ALL: [FactKind; 5] =
        [FactKind::Decision, FactKind::Correction, FactKind::Preference, FactKind::State, FactKind::Fact];

    pub fn as_str(self) -> &'static str {
        match self {
            FactKind::Decision => "decision",
            FactKind::Correction => "correction",
            FactKind::Preference => "preference",
            FactKind::State => "state",
            FactKind::Fact => "fact",
        }
    }

    /// The kind named `name` (exactly as [`FactKind::as_str`] spells it).
    pub fn parse(name: &str) -> Option<FactKind> {
        FactKind::ALL.into_iter().find(|kind| kind.as_str() == name)
    }
}

impl fmt::Display for FactKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One extracted fact: a sentence of the transcript, with its speaker.
#[derive(Clone, Debug, PartialEq)]
pub struct Fact {
    pub kind: FactKind,
    /// `"Speaker: sentence"` (the bare sentence without a speaker), at most
    /// `max_fact_chars` characters; a cut text ends in `…`.
    pub text: String,
    /// The importance score that selected it; comparable within one call only.
    pub score: f32,
    /// The index of the message the sentence came from.
    pub message: usize,
}

/// A summary and facts, in transcript order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Distilled {
    /// The chosen summary sentences in transcript order, one `"Speaker: sentence"`
    /// per line; empty for a transcript with nothing to summarise.
    pub summary: String,
    pub facts: Vec<Fact>,
}

/// Limits for [`extract`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExtractOptions {
    /// At most this many facts (0: none).
    pub max_facts: usize,
    /// A fact's text is cut to this many characters (values below 16 count as 16).
    pub max_fact_chars: usize,
    /// The summary has at most this many sentences (0: an empty summary).
    pub summary_sentences: usize,
}

impl Default for ExtractOptions {
    fn default() -> Self {
        ExtractOptions { max_facts: 20, max_fact_chars: 300, summary_sentences: 3 }
    }
}

/// A fact must score at least this: a greeting or a bare "ok" never becomes one,
/// even when the budget has room.
pub const MIN_FACT_SCORE: f32 = 0.45;

/// Two sentences whose content-term sets overlap this much (Jaccard) are one fact.
const NEAR_DUPLICATE: f32 = 0.6;

struct Sentence {
    message: usize,
    label: Option<String>,
    text: String,
    terms: Vec<String>,
    kind: FactKind,
    fact_score: f32,
    summary_score: f32,
}

/// Picks up to `max_facts` salient sentences as facts and `summary_sentences`
/// central ones as a summary. Deterministic: the same input gives the same output.
///
/// The caller scrubs the messages first; `counter` measures sentence length.
pub fn extract(messages: &[Message], opts: ExtractOptions, counter: &TokenCounter) -> Distilled {
    let max_chars = opts.max_fact_chars.max(16);
    let mut sentences = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        let label = label(message.speaker.as_deref(), 16, counter);
        for range in text::sentences(&message.text) {
            let sentence = message.text[range].trim();
            if sentence.is_empty() {
                continue;
            }
            sentences.push(Sentence {
                message: index,
                label: label.clone(),
                text: sentence.to_string(),
                terms: content_terms(sentence),
                kind: FactKind::Fact,
                fact_score: 0.0,
                summary_score: 0.0,
            });
        }
    }
    if sentences.is_empty() {
        return Distilled::default();
    }

    // Recurrence: in how many messages each content term occurs.
    let mut df: HashMap<&str, u32> = HashMap::new();
    {
        let mut seen: HashSet<(usize, &str)> = HashSet::new();
        for s in &sentences {
            for term in &s.terms {
                if seen.insert((s.message, term.as_str())) {
                    *df.entry(term.as_str()).or_default() += 1;
                }
            }
        }
    }
    let scores: Vec<(FactKind, f32, f32)> = {
        let n = sentences.len();
        sentences.iter().enumerate().map(|(ordinal, s)| score(s, ordinal, n, &df, counter)).collect()
    };
    for (s, (kind, fact_score, summary_score)) in sentences.iter_mut().zip(scores) {
        s.kind = kind;
        s.fact_score = fact_score;
        s.summary_score = summary_score;
    }

    let facts = pick(&sentences, opts.max_facts, |s| s.fact_score, MIN_FACT_SCORE)
        .into_iter()
        .map(|i| {
            let s = &sentences[i];
            Fact {
                kind: s.kind,
                text: truncate(&render(s.label.as_deref(), &s.text), max_chars),
                score: s.fact_score,
                message: s.message,
            }
        })
        .collect();
    let summary = pick(&sentences, opts.summary_sentences, |s| s.summary_score, 0.0)
        .into_iter()
        .map(|i| truncate(&render(sentences[i].label.as_deref(), &sentences[i].text), max_chars))
        .collect::<Vec<_>>()
        .join("\n");
    Distilled { summary, facts }
}

/// The best `limit` sentences by `key` (at least `floor`), skipping near
/// duplicates of better ones; returned in transcript order.
fn pick(sentences: &[Sentence], limit: usize, key: impl Fn(&Sentence) -> f32, floor: f32) -> Vec<usize> {
    let mut order: Vec<usize> = (0..sentences.len()).collect();
    // Stable: equal scores keep transcript order.
    order.sort_by(|&a, &b| key(&sentences[b]).total_cmp(&key(&sentences[a])));
    let mut chosen: Vec<usize> = Vec::new();
    for i in order {
        if chosen.len() >= limit {
            break;
        }
        if key(&sentences[i]) < floor {
            break;
        }
        if chosen.iter().any(|&j| near_duplicate(&sentences[i], &sentences[j])) {
            continue;
        }
        chosen.push(i);
    }
    chosen.sort_unstable();
    chosen
}

fn near_duplicate(a: &Sentence, b: &Sentence) -> bool {
    if a.text.to_lowercase() == b.text.to_lowercase() {
        return true;
    }
    if a.terms.is_empty() || b.terms.is_empty() {
        return false;
    }
    let sa: HashSet<&str> = a.terms.iter().map(String::as_str).collect();
    let sb: HashSet<&str> = b.terms.iter().map(String::as_str).collect();
    let common = sa.intersection(&sb).count() as f32;
    let union = sa.union(&sb).count() as f32;
    let smaller = sa.len().min(sb.len()) as f32;
    common / union >= NEAR_DUPLICATE || (smaller >= 3.0 && common / smaller >= 0.8)
}

/// `text` cut to `max` characters at a word boundary when one is near, ending in `…`.
fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let keep: String = text.chars().take(max - 1).collect();
    let cut = match keep.rfind(char::is_whitespace) {
        Some(at) if at >= keep.len() / 2 => &keep[..at],
        _ => keep.as_str(),
    };
    format!("{}…", cut.trim_end())
}

// ---------------------------------------------------------------------------
// Scoring
// ---------------------------------------------------------------------------

/// (kind, fact score, summary score) of one sentence.
fn score(
    s: &Sentence,
    ordinal: usize,
    n: usize,
    df: &HashMap<&str, u32>,
    counter: &TokenCounter,
) -> (FactKind, f32, f32) {
    let lower = s.text.to_lowercase().replace(['’', '‘'], "'");
    let (kind, cue) = cues(&lower);

    // Recurrence of the sentence's content terms elsewhere in the transcript.
    let terms = s.terms.len() as f32;
    let recurring: f32 =
        s.terms.iter().map(|t| (df.get(t.as_str()).copied().unwrap_or(1) - 1).min(3) as f32 / 3.0).sum();
    let recurrence = (recurring / terms.max(1.0).sqrt()).min(1.5);

    let specific = (specifics(&s.text, &lower) as f32 * 0.25).min(1.0);
    let personal = if patterns().first_person.is_match(&lower) { 0.25 } else { 0.0 };
    let position = {
        let at = ordinal as f32 / n.max(1) as f32;
        if n >= 10 && !(0.1..0.9).contains(&at) {
            0.1
        } else {
            0.0
        }
    };

    // A sentence this long is damped anyway; counting it could be slow (tiktoken is
    // quadratic in one long word).
    let tokens = if s.text.len() > 2000 { u32::MAX } else { counter.count(&s.text) };
    let length = match tokens {
        0..=3 => 0.2,
        4..=6 => 0.6,
        7..=60 => 1.0,
        61..=120 => 0.8,
        _ => 0.6,
    };
    let content = match s.terms.len() {
        0 => 0.1,
        1 => 0.4,
        _ => 1.0,
    };
    let question = if s.text.trim_end_matches(['"', '\'', ')']).ends_with('?') {
        if cue > 0.0 {
            0.7
        } else {
            0.35
        }
    } else {
        1.0
    };
    let filler = if patterns().filler.is_match(&lower) && specific == 0.0 { 0.5 } else { 1.0 };
    let damp = length * content * question * filler;

    // Content: how much a sentence says, whatever it is about.
    let substance = 0.07 * terms.min(6.0);
    let fact = (0.1 + substance + 0.5 * recurrence + 0.6 * specific + cue + personal + position) * damp;
    let summary = (0.2 + recurrence + 0.3 * specific + 0.5 * cue) * damp;
    (kind, fact, summary)
}

/// The strongest cue phrase in a lowercased sentence: its kind and weight.
fn cues(lower: &str) -> (FactKind, f32) {
    let mut best = (FactKind::Fact, 0.0f32);
    for (regex, kind, weight) in &patterns().cues {
        if *weight > best.1 && regex.is_match(lower) {
            best = (*kind, *weight);
        }
    }
    best
}

/// How many specific details a sentence holds: numbers (digits or words), names
/// (capitalised words inside the sentence) and time expressions.
fn specifics(original: &str, lower: &str) -> usize {
    let numbers = original
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().any(|c| c.is_ascii_digit()))
        .count();
    let names = original
        .split_whitespace()
        .skip(1)
        .filter(|w| {
            let w = w.trim_matches(|c: char| !c.is_alphanumeric());
            let mut cs = w.chars();
            matches!(cs.next(), Some(c) if c.is_uppercase())
                && w.chars().count() > 1
                && !matches!(w, "I'm" | "I've" | "I'll" | "I'd" | "OK" | "Ok")
        })
        .count();
    let times = patterns().time.find_iter(lower).count();
    let number_words = patterns().number_words.find_iter(lower).count();
    (numbers + names + times + number_words).min(6)
}

struct Patterns {
    cues: Vec<(Regex, FactKind, f32)>,
    first_person: Regex,
    filler: Regex,
    time: Regex,
    number_words: Regex,
}

fn patterns() -> &'static Patterns {
    static PATTERNS: OnceLock<Patterns> = OnceLock::new();
    PATTERNS.get_or_init(|| {
        let cue = |re: &str, kind, weight| (Regex::new(re).expect("cue regex"), kind, weight);
        use FactKind::*;
        Patterns {
            cues: vec![
                // Decisions.
                cue(r"\b(we|i|they|you|team|everyone)\s+(have\s+|'ve\s+|finally\s+)?(decided|agreed|chose|settled on|opted)\b", Decision, 1.0),
                cue(r"\blet'?s (go with|use|do|stick with|pick|ship|move forward)\b", Decision, 1.0),
                cue(r"\b(we'll|we will|i'll|i will) go with\b", Decision, 1.0),
                cue(r"\b(decided|decision|agreed|the plan is|final call|going forward)\b", Decision, 0.8),
                // Corrections.
                cue(r"^(actually|correction|wait|sorry)\b", Correction, 1.0),
                cue(r"\b(correction|scratch that|i meant|i was wrong|to clarify|my mistake|not .{1,40}, but)\b", Correction, 1.0),
                cue(r"\bno,\s*(it'?s|it is|that'?s|that is|the|i|we|actually)\b", Correction, 1.0),
                cue(r"\bactually\b", Correction, 0.6),
                // Preferences.
                cue(r"\bi\s+(really\s+|just\s+|absolutely\s+|do\s+not\s+|don'?t\s+|would\s+)?(prefer|like|love|enjoy|hate|dislike|adore|can'?t stand)\b", Preference, 0.8),
                cue(r"\b(my favou?rite|i'?d rather|i'?m (a big |a huge )?fan of|i'?m into|passionate about)\b", Preference, 0.8),
                cue(r"\b(always|never|please (don'?t|do not|avoid))\b", Preference, 0.6),
                // State and change.
                cue(r"\b(is|are) now\b|\bnow (lives?|works?|uses?|runs?|has)\b", State, 0.7),
                cue(r"\b(moved to|switched to|no longer|currently|nowadays|these days|deadline|due (on|by))\b", State, 0.7),
                cue(r"\b(started|began|joined|finished|graduated|adopted|bought|got (a|an|my) new|signed up)\b", State, 0.6),
                cue(r"\b(i'?m|we'?re|i am|we are) (working|studying|living|staying|training|planning|going|looking) (on|at|in|to|for)\b", State, 0.6),
            ],
            first_person: Regex::new(r"\b(i|i'm|i've|i'll|i'd|my|mine|we|we're|we've|our|me)\b").expect("regex"),
            filler: Regex::new(
                r"^(thanks|thank you|thx|congrats|congratulations|wow|haha|lol|hey|hi|hello|bye|see you|take care|good luck|sounds (great|good|fun)|that'?s (great|awesome|amazing|cool|so)|glad|aww|yeah|yes|no problem|ok|okay|sure)\b",
            )
            .expect("regex"),
            time: Regex::new(
                r"\b(yesterday|today|tomorrow|tonight|ago|last (night|week|weekend|month|year|summer|winter|spring|fall)|next (week|weekend|month|year)|this (week|weekend|month|year)|(mon|tues|wednes|thurs|fri|satur|sun)day|january|february|march|april|june|july|august|september|october|november|december)\b",
            )
            .expect("regex"),
            number_words: Regex::new(
                r"\b(two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|hundred|thousand|million|billion|dozen|first|second|third)\b",
            )
            .expect("regex"),
        }
    })
}

// ---------------------------------------------------------------------------
// Content terms
// ---------------------------------------------------------------------------

/// Function words and chat filler that say nothing about the topic.
const STOPWORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "are",
    "aren't",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "can't",
    "cannot",
    "could",
    "couldn't",
    "did",
    "didn't",
    "do",
    "does",
    "doesn't",
    "doing",
    "don't",
    "down",
    "during",
    "each",
    "even",
    "ever",
    "every",
    "few",
    "for",
    "from",
    "further",
    "get",
    "gets",
    "getting",
    "got",
    "gonna",
    "had",
    "hadn't",
    "has",
    "hasn't",
    "have",
    "haven't",
    "having",
    "he",
    "he'd",
    "he'll",
    "he's",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "i'd",
    "i'll",
    "i'm",
    "i've",
    "if",
    "in",
    "into",
    "is",
    "isn't",
    "it",
    "it's",
    "its",
    "itself",
    "just",
    "know",
    "let's",
    "like",
    "lot",
    "lots",
    "make",
    "made",
    "many",
    "maybe",
    "me",
    "more",
    "most",
    "much",
    "must",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "oh",
    "ok",
    "okay",
    "on",
    "once",
    "one",
    "only",
    "or",
    "other",
    "ought",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "pretty",
    "quite",
    "really",
    "same",
    "she",
    "she'd",
    "she'll",
    "she's",
    "should",
    "shouldn't",
    "so",
    "some",
    "something",
    "still",
    "such",
    "sure",
    "than",
    "that",
    "that's",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "there's",
    "these",
    "they",
    "they'd",
    "they'll",
    "they're",
    "they've",
    "thing",
    "things",
    "think",
    "this",
    "those",
    "through",
    "to",
    "too",
    "totally",
    "under",
    "until",
    "up",
    "us",
    "very",
    "want",
    "was",
    "wasn't",
    "way",
    "we",
    "we'd",
    "we'll",
    "we're",
    "we've",
    "well",
    "were",
    "weren't",
    "what",
    "what's",
    "when",
    "where",
    "which",
    "while",
    "who",
    "who's",
    "whom",
    "why",
    "will",
    "with",
    "won't",
    "would",
    "wouldn't",
    "yeah",
    "yes",
    "yet",
    "you",
    "you'd",
    "you'll",
    "you're",
    "you've",
    "your",
    "yours",
    "yourself",
    "yourselves",
    "wow",
    "hey",
    "hi",
    "hello",
    "thanks",
    "thank",
    "lol",
    "haha",
    "awesome",
    "great",
    "cool",
    "amazing",
    "glad",
    "good",
    "nice",
    "feel",
    "feels",
    "felt",
    "going",
    "goes",
    "said",
    "say",
    "says",
    "tell",
    "told",
    "see",
    "seen",
    "look",
    "looks",
    "sounds",
    "sound",
];

fn is_stopword(word: &str) -> bool {
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| STOPWORDS.iter().copied().collect()).contains(word)
}

/// A crude suffix stripper, enough for "plans"/"plan" and "painting"/"paint" to meet.
fn stem(word: &str) -> String {
    let mut w = word.strip_suffix("'s").unwrap_or(word).to_string();
    if !w.is_ascii() {
        return w;
    }
    if w.len() > 4 && w.ends_with("ies") {
        w.truncate(w.len() - 3);
        w.push('y');
    } else if w.len() > 3 && w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") {
        w.truncate(w.len() - 1);
    }
    if w.len() > 5 && w.ends_with("ing") {
        w.truncate(w.len() - 3);
    } else if w.len() > 4 && w.ends_with("ed") && !w.ends_with("eed") {
        w.truncate(w.len() - 2);
    }
    w
}

/// The distinct content terms of a sentence, in first-seen order: lowercased
/// words that are not stopwords, at least three characters long or holding a digit,
/// lightly stemmed.
pub(crate) fn content_terms(sentence: &str) -> Vec<String> {
    let lower = sentence.to_lowercase().replace(['’', '‘'], "'");
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for raw in lower.split(|c: char| !(c.is_alphanumeric() || c == '\'')) {
        let word = raw.trim_matches('\'');
        if word.is_empty() || is_stopword(word) {
            continue;
        }
        let has_digit = word.chars().any(|c| c.is_ascii_digit());
        if word.chars().count() < 3 && !has_digit {
            continue;
        }
        let term = stem(word);
        if seen.insert(term.clone()) {
            out.push(term);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_drop_stopwords_and_stem() {
        assert_eq!(content_terms("I really like the paintings, and Painting!"), ["paint"]);
        assert_eq!(content_terms("Caroline's 3 cats"), ["caroline", "3", "cat"]);
    }

    #[test]
    fn truncation_is_bounded_and_marked() {
        let t = truncate("one two three four five six seven", 16);
        assert!(t.chars().count() <= 16, "{t}");
        assert!(t.ends_with('…'));
        assert_eq!(truncate("short", 16), "short");
        let t = truncate(&"x".repeat(40), 16);
        assert_eq!(t.chars().count(), 16);
    }

    #[test]
    fn kinds_round_trip() {
        for kind in FactKind::ALL {
            assert_eq!(FactKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(FactKind::parse("Decision"), None);
    }
}
