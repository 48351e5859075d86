//! Splitting a transcript into chunks that fit a token budget.
//!
//! Every count is exact: a chunk's `tokens` is `counter.count(&chunk.text)`,
//! measured on the final text, never a sum of per-line estimates (token counts
//! are not additive across a boundary). Candidate chunks are grown by galloping
//! (1, 2, 4, ... units, then a binary search), so the work is `O(n log n)` counts
//! of budget-sized texts, never quadratic in the transcript.
//!
//! Cost: tiktoken's BPE is quadratic in the length of one pre-tokenised piece (a
//! run of letters, punctuation or spaces with no break: 200,000 `z`s take seconds
//! to count). For tiktoken vocabularies a text longer than `budget * L` bytes, `L`
//! the longest token in the vocabulary (128 for o200k and cl100k), cannot fit and
//! is rejected without counting, and a text of at most `budget` bytes always fits;
//! inside one long word the cut is found by interpolation in a few counts. A
//! Hugging Face tokenizer has no such bounds: every candidate is counted.

use std::ops::Range;

use super::text;
use super::Message;
use crate::error::{Error, Result};
use crate::tokens::TokenCounter;

/// The smallest budget [`chunk`] accepts: room for a speaker label (at most a
/// quarter of the budget) and at least one character of text.
pub const MIN_CHUNK_TOKENS: u32 = 16;

/// A run of whole messages, or one part of a message too long to fit alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// Indices into the input, ascending and consecutive; exactly one when
    /// `part` is set.
    pub messages: Vec<usize>,
    /// One line per message, `"Speaker: text"` (or `text` without a speaker),
    /// joined with `\n`. A part carries its message's speaker label too.
    pub text: String,
    /// `counter.count(&text)`, at most the budget.
    pub tokens: u32,
    /// `Some((k, n))` when this is part `k` (0-based) of the `n` parts of the one
    /// message in `messages`; the parts sit in consecutive chunks, in order.
    pub part: Option<(usize, usize)>,
}

/// Splits `messages` into chunks of at most `max_tokens` tokens in `counter`'s
/// tokenizer, keeping the order.
///
/// Chunks break between messages; a message is cut only when it alone does not fit,
/// and then between sentences, inside a sentence between words, and inside a word
/// between characters, each only where the coarser cut is not enough. Whitespace at
/// the edges of a message or a part is trimmed; nothing else is lost or repeated.
///
/// A speaker label longer than a quarter of the budget is shortened (ending in
/// `…`); control characters in a label become spaces. Errors: `max_tokens` below
/// [`MIN_CHUNK_TOKENS`] is `InvalidInput`.
pub fn chunk(messages: &[Message], max_tokens: u32, counter: &TokenCounter) -> Result<Vec<Chunk>> {
    if max_tokens < MIN_CHUNK_TOKENS {
        return Err(Error::invalid(format!(
            "max_chunk_tokens must be at least {MIN_CHUNK_TOKENS}, got {max_tokens}"
        )));
    }
    let measure = Measure::new(counter, max_tokens);
    let mut out = Vec::new();
    let mut run: Vec<(usize, String)> = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        let label = label(message.speaker.as_deref(), max_tokens / 4, counter);
        let line = render(label.as_deref(), &message.text);
        if measure.fits(&line) {
            run.push((index, line));
            continue;
        }
        pack_lines(&run, &measure, &mut out);
        run.clear();
        let parts = split_message(label.as_deref(), message.text.trim(), &measure)?;
        let n = parts.len();
        for (k, (text, tokens)) in parts.into_iter().enumerate() {
            out.push(Chunk { messages: vec![index], text, tokens, part: Some((k, n)) });
        }
    }
    pack_lines(&run, &measure, &mut out);
    Ok(out)
}

/// Whether a text fits the budget, with cheap bounds before the exact count.
struct Measure<'a> {
    counter: &'a TokenCounter,
    max: u32,
    /// The longest token of a byte-level vocabulary, in bytes: a text of `b` bytes
    /// has at least `b / longest` tokens and at most `b`.
    longest: Option<usize>,
}

impl<'a> Measure<'a> {
    fn new(counter: &'a TokenCounter, max: u32) -> Self {
        let longest = match counter {
            TokenCounter::Tiktoken(vocabulary) => longest_token(vocabulary()),
            TokenCounter::HuggingFace(_) => None,
        };
        Measure { counter, max, longest }
    }

    /// `Some(tokens)` when `text` fits (the exact count), `None` when it does not.
    fn measure(&self, text: &str) -> Option<u32> {
        if let Some(longest) = self.longest {
            if text.len() > (self.max as usize).saturating_mul(longest) {
                return None;
            }
        }
        let tokens = self.counter.count(text);
        (tokens <= self.max).then_some(tokens)
    }

    fn fits(&self, text: &str) -> bool {
        if self.longest.is_some() && text.len() <= self.max as usize {
            return true; // every token of a byte-level vocabulary is at least one byte
        }
        self.measure(text).is_some()
    }

    fn count(&self, text: &str) -> u32 {
        self.counter.count(text)
    }
}

/// The longest token of a tiktoken vocabulary in bytes, found once per vocabulary
/// by decoding every id (a few milliseconds) and cached.
fn longest_token(bpe: &'static crate::tokens::Bpe) -> Option<usize> {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static CACHE: OnceLock<Mutex<HashMap<usize, Option<usize>>>> = OnceLock::new();
    let key = bpe as *const crate::tokens::Bpe as usize;
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(&found) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return found;
    }
    let mut longest = 0usize;
    let mut misses = 0u32;
    let mut id = 0u32;
    // Ids are dense from 0; special tokens sit just past the ordinary ones.
    while misses < 4096 {
        match bpe.decode_bytes(&[id]) {
            Ok(bytes) => {
                longest = longest.max(bytes.len());
                misses = 0;
            }
            Err(_) => misses += 1,
        }
        id = match id.checked_add(1) {
            Some(next) => next,
            None => break,
        };
    }
    let found = (longest > 0).then_some(longest);
    cache.lock().unwrap_or_else(|e| e.into_inner()).insert(key, found);
    found
}

/// The most characters of a speaker's name a label keeps.
const LABEL_CHARS: usize = 256;

/// `"label: text"`, `"label:"` for an empty text, or the bare text without a label.
pub(crate) fn render(label: Option<&str>, text: &str) -> String {
    let body = text.trim();
    match label {
        Some(label) if body.is_empty() => format!("{label}:"),
        Some(label) => format!("{label}: {body}"),
        None => body.to_string(),
    }
}

/// The speaker as shown: control characters become spaces, the ends are trimmed,
/// an empty name is no label, and a name over `budget` tokens (with its colon) or
/// 256 characters is cut to fit and ends in `…`.
pub(crate) fn label(speaker: Option<&str>, budget: u32, counter: &TokenCounter) -> Option<String> {
    let clean: String = speaker?.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    let clean = clean.trim();
    if clean.is_empty() {
        return None;
    }
    // Only a name's first 256 characters are ever shown: counting a huge one is
    // wasted work (and quadratic in tiktoken for one long word).
    let clean = match clean.char_indices().nth(LABEL_CHARS) {
        Some((at, _)) => &clean[..at],
        None if counter.count(&format!("{clean}:")) <= budget => return Some(clean.to_string()),
        None => clean,
    };
    let ends: Vec<usize> = clean.char_indices().map(|(i, _)| i).skip(1).collect();
    // The longest prefix whose shortened label fits; prefixes grow monotonically
    // in practice, and only a measured fit is ever accepted.
    let fits = |end: usize| counter.count(&format!("{}…:", clean[..end].trim_end())) <= budget;
    let (mut lo, mut hi) = (0usize, ends.len());
    let mut best = None;
    while lo < hi {
        let mid = (lo + hi) / 2;
        if fits(ends[mid]) {
            best = Some(ends[mid]);
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    best.map(|end| format!("{}…", clean[..end].trim_end()))
}

/// The largest `end` in `start + 1..=n` with `fits(start, end)`, given that
/// `fits(start, start + 1)` holds: doubling steps, then a binary search.
fn gallop(start: usize, n: usize, mut fits: impl FnMut(usize, usize) -> bool) -> usize {
    let mut good = start + 1;
    let mut bad = n + 1;
    let mut step = 1;
    while good < n {
        let probe = (good + step).min(n);
        if fits(start, probe) {
            good = probe;
            step *= 2;
        } else {
            bad = probe;
            break;
        }
    }
    while bad - good > 1 {
        let mid = good + (bad - good) / 2;
        if fits(start, mid) {
            good = mid;
        } else {
            bad = mid;
        }
    }
    good
}

/// Packs a run of lines that each fit alone into as few chunks as galloping finds.
fn pack_lines(run: &[(usize, String)], measure: &Measure<'_>, out: &mut Vec<Chunk>) {
    if run.is_empty() {
        return;
    }
    // One joined text; a candidate chunk is a slice of it.
    let mut all = String::new();
    let mut spans = Vec::with_capacity(run.len());
    for (k, (_, line)) in run.iter().enumerate() {
        if k > 0 {
            all.push('\n');
        }
        let start = all.len();
        all.push_str(line);
        spans.push(start..all.len());
    }
    let slice = |a: usize, b: usize| &all[spans[a].start..spans[b - 1].end];
    let mut i = 0;
    while i < run.len() {
        let end = gallop(i, run.len(), |a, b| measure.fits(slice(a, b)));
        let text = slice(i, end).to_string();
        let tokens = measure.count(&text);
        debug_assert!(tokens <= measure.max);
        out.push(Chunk {
            messages: run[i..end].iter().map(|(index, _)| *index).collect(),
            text,
            tokens,
            part: None,
        });
        i = end;
    }
}

#[derive(Clone, Copy)]
enum Level {
    Sentence,
    Word,
    Char,
}

/// The parts of one message body that does not fit whole, each rendered with the
/// label and with its exact count.
fn split_message(label: Option<&str>, body: &str, measure: &Measure<'_>) -> Result<Vec<(String, u32)>> {
    let mut parts = Vec::new();
    split_range(label, body, 0..body.len(), Level::Sentence, measure, &mut parts)?;
    Ok(parts)
}

fn split_range(
    label: Option<&str>,
    body: &str,
    range: Range<usize>,
    level: Level,
    measure: &Measure<'_>,
    parts: &mut Vec<(String, u32)>,
) -> Result<()> {
    let piece = &body[range.clone()];
    let local = match level {
        Level::Sentence => text::sentences(piece),
        Level::Word => text::words(piece),
        Level::Char => text::chars(piece),
    };
    let spans: Vec<Range<usize>> =
        local.into_iter().map(|r| r.start + range.start..r.end + range.start).collect();
    let candidate = |a: usize, b: usize| render(label, &body[spans[a].start..spans[b - 1].end]);
    let mut i = 0;
    while i < spans.len() {
        if body[spans[i].clone()].trim().is_empty() {
            i += 1; // whitespace between cuts: nothing to keep
            continue;
        }
        if let Some(first) = measure.measure(&candidate(i, i + 1)) {
            let end = match level {
                Level::Char => {
                    interpolate(i, spans.len(), first, measure.max, |a, b| measure.measure(&candidate(a, b)))
                }
                _ => gallop(i, spans.len(), |a, b| measure.fits(&candidate(a, b))),
            };
            let text = candidate(i, end);
            let tokens = measure.count(&text);
            parts.push((text, tokens));
            i = end;
            continue;
        }
        match level {
            Level::Sentence => split_range(label, body, spans[i].clone(), Level::Word, measure, parts)?,
            Level::Word => split_range(label, body, spans[i].clone(), Level::Char, measure, parts)?,
            Level::Char => {
                // One character with the label does not fit: a tokenizer that spends
                // many tokens on it. Keep the character without the label.
                let text = body[spans[i].clone()].to_string();
                let tokens = measure.count(&text);
                if tokens > measure.max {
                    return Err(Error::Internal(format!(
                        "one character takes {tokens} tokens, over the chunk budget {}",
                        measure.max
                    )));
                }
                parts.push((text, tokens));
            }
        }
        i += 1;
    }
    Ok(())
}

/// Like [`gallop`] for one long run of characters, where each count is expensive:
/// the next probe is where the characters-per-token rate measured so far says the
/// budget ends, and the search stops once a fit fills 90% of the budget. `first`
/// is the count of `start..start + 1`, which fits; `measure` gives the count of a
/// fitting range and `None` for one that does not fit.
fn interpolate(
    start: usize,
    n: usize,
    first: u32,
    max: u32,
    mut measure: impl FnMut(usize, usize) -> Option<u32>,
) -> usize {
    let (mut good, mut good_tokens) = (start + 1, first);
    let mut bad = n + 1;
    let mut bisect = false;
    while bad - good > 1 && (good_tokens as u64) * 10 < (max as u64) * 9 {
        let probe = if bisect {
            good + (bad - good) / 2
        } else {
            let per_token = (good - start) as f64 / f64::from(good_tokens.max(1));
            let target = start + (per_token * f64::from(max) * 0.95) as usize;
            target.clamp(good + 1, bad - 1)
        }
        .min(n);
        match measure(start, probe) {
            Some(tokens) => {
                good = probe;
                good_tokens = tokens;
                bisect = false;
            }
            None => {
                bad = probe;
                bisect = true; // an estimate overshot: halve the bracket next
            }
        }
    }
    good
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TokenizerSpec;

    fn counter() -> TokenCounter {
        TokenCounter::load(&TokenizerSpec::O200k).unwrap()
    }

    #[test]
    fn interpolation_fills_most_of_the_budget() {
        // A linear cost of 3 units per token, and a noisy one.
        for max in [16u32, 100, 1000] {
            let end = interpolate(0, 100_000, 1, max, |a, b| {
                let t = ((b - a) as u32).div_ceil(3);
                (t <= max).then_some(t)
            });
            let t = (end as u32).div_ceil(3);
            assert!(t <= max && t * 10 >= max * 9, "max {max}: {t}");
            let end = interpolate(5, 10_000, 1, max, |a, b| {
                let t = ((b - a) as u32 + (b as u32 % 7)) / 2;
                (t <= max).then_some(t)
            });
            assert!(((end - 5) as u32 + (end as u32 % 7)) / 2 <= max);
        }
        assert_eq!(interpolate(0, 1, 1, 16, |_, _| Some(1)), 1);
    }

    #[test]
    fn tiktoken_tokens_are_at_most_128_bytes() {
        let c = counter();
        let TokenCounter::Tiktoken(bpe) = c else { unreachable!() };
        assert_eq!(longest_token(bpe()), Some(128));
    }

    #[test]
    fn gallop_finds_the_largest_fit() {
        for limit in 1..=20 {
            assert_eq!(gallop(0, 20, |_, b| b <= limit), limit);
            assert_eq!(gallop(3, 20, |a, b| b - a <= limit), (3 + limit).min(20));
        }
    }

    #[test]
    fn labels_are_cleaned_and_shortened() {
        let c = counter();
        assert_eq!(label(Some("  Ann\nB "), 8, &c).as_deref(), Some("Ann B"));
        assert_eq!(label(Some(" \t"), 8, &c), None);
        assert_eq!(label(None, 8, &c), None);
        let long = "word ".repeat(100);
        let got = label(Some(&long), 8, &c).unwrap();
        assert!(got.ends_with('…'));
        assert!(c.count(&format!("{got}:")) <= 8);
    }

    #[test]
    fn render_forms() {
        assert_eq!(render(Some("A"), "  hi  "), "A: hi");
        assert_eq!(render(Some("A"), "  "), "A:");
        assert_eq!(render(None, " hi "), "hi");
    }
}
