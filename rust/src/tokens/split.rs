//! tiktoken's pre-tokenisation: text is cut into pieces by a regex before BPE
//! runs on each piece.
//!
//! The patterns are tiktoken's with one change: `\s+(?!\S)`, the only construct
//! the `regex` crate lacks, is dropped and its effect restored by hand (see
//! [`Splitter::pieces`]). The possessive quantifiers of cl100k's pattern become
//! greedy ones: in each place nothing that follows could match what
//! backtracking would give back, so the matches are the same.

use regex_automata::meta::Regex;
use regex_automata::{Anchored, Input};

/// o200k's pattern; tiktoken has `|\s+(?!\S)` before the final `|\s+`.
pub(super) const O200K: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n/]*",
    r"|\s*[\r\n]+",
    r"|\s+",
);

/// cl100k's pattern; tiktoken's `|\s+(?!\S)|\s` is `|\s+` here.
pub(super) const CL100K: &str = concat!(
    r"'(?i:[sdmt]|ll|ve|re)",
    r"|[^\r\n\p{L}\p{N}]?\p{L}+",
    r"|\p{N}{1,3}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*",
    r"|\s+$",
    r"|\s*[\r\n]",
    r"|\s+",
);

pub(super) struct Splitter {
    regex: Regex,
    /// Where the pattern's match from a given place ends, for ASCII text,
    /// found without the regex (o200k's pattern only; see `ascii`).
    ascii: Option<fn(&[u8], usize) -> usize>,
}

impl Splitter {
    pub(super) fn new(pattern: &str) -> Result<Self, String> {
        let ascii = (pattern == O200K).then_some(ascii::o200k_end as fn(&[u8], usize) -> usize);
        Regex::new(pattern).map(|regex| Splitter { regex, ascii }).map_err(|err| err.to_string())
    }

    /// Calls `f` on each piece of `text`, in order; the pieces tile the text.
    ///
    /// Every character starts a match of either pattern, so each search is
    /// anchored where the last piece ended (one forward scan, no reverse one).
    pub(super) fn pieces(&self, text: &str, mut f: impl FnMut(&str)) {
        let ascii = self.ascii.filter(|_| text.is_ascii());
        let mut start = 0;
        while start < text.len() {
            let mut end = match ascii {
                Some(end_of) => end_of(text.as_bytes(), start),
                None => self.regex_end(text, start),
            };
            // `\s+(?!\S)`: before a non-space, a run of two or more whitespace
            // characters leaves its last one to start the next piece (" word").
            // Only the final `\s+` alternative ends on whitespace other than \r
            // or \n, and it always takes the whole run, so the run ends at `end`.
            if end < text.len() {
                let piece = &text[start..end];
                if let Some(last) = piece.chars().next_back() {
                    let run_of_two = piece.len() > last.len_utf8();
                    if run_of_two && last.is_whitespace() && last != '\r' && last != '\n' {
                        end -= last.len_utf8();
                    }
                }
            }
            f(&text[start..end]);
            start = end;
        }
    }

    /// Where the pattern's match from `start` ends.
    fn regex_end(&self, text: &str, start: usize) -> usize {
        let input = Input::new(text).range(start..).anchored(Anchored::Yes);
        match self.regex.search(&input) {
            Some(found) if found.end() > start => found.end(),
            // Unreachable for these patterns; one character keeps the loop going.
            _ => start + text[start..].chars().next().map_or(1, char::len_utf8),
        }
    }
}

/// o200k's pattern on ASCII text, by hand: in ASCII its classes are plain
/// byte ranges, and each alternative has one way to match, so the match a
/// backtracking engine would find (the regex's, leftmost-first) is read off
/// in one pass.
mod ascii {
    /// `\s` in ASCII (the regex's Unicode `\s`, vertical tab included).
    fn space(b: u8) -> bool {
        matches!(b, b' ' | b'\t' | b'\n' | 0x0B | 0x0C | b'\r')
    }

    /// `[^\s\p{L}\p{N}]`: punctuation, symbols, control characters.
    fn other(b: u8) -> bool {
        !b.is_ascii_alphanumeric() && !space(b)
    }

    fn newline(b: u8) -> bool {
        b == b'\r' || b == b'\n'
    }

    /// Where the match of `O200K` that starts at `start` (< `b.len()`) ends,
    /// `b` being ASCII.
    pub(super) fn o200k_end(b: &[u8], start: usize) -> usize {
        let n = b.len();
        let c = b[start];
        // `[^\r\n\p{L}\p{N}]?[\p{Lu}..]*[\p{Ll}..]+(contraction)?` and
        // `[^\r\n\p{L}\p{N}]?[\p{Lu}..]+[\p{Ll}..]*(contraction)?`: upper
        // then lower case, at least one letter in all, after at most one
        // character that is neither a letter, a digit nor a line break. The
        // classes are disjoint, so backtracking never finds another split.
        let from = if c.is_ascii_alphanumeric() || newline(c) { start } else { start + 1 };
        let mut i = from;
        while i < n && b[i].is_ascii_uppercase() {
            i += 1;
        }
        while i < n && b[i].is_ascii_lowercase() {
            i += 1;
        }
        if i > from {
            return contraction(b, i);
        }
        // `\p{N}{1,3}`
        if c.is_ascii_digit() {
            let mut i = start + 1;
            while i < n && i < start + 3 && b[i].is_ascii_digit() {
                i += 1;
            }
            return i;
        }
        // ` ?[^\s\p{L}\p{N}]+[\r\n/]*`
        let mut i = start;
        if c == b' ' && i + 1 < n && other(b[i + 1]) {
            i += 1;
        }
        if other(b[i]) {
            while i < n && other(b[i]) {
                i += 1;
            }
            while i < n && (newline(b[i]) || b[i] == b'/') {
                i += 1;
            }
            return i;
        }
        // Only whitespace is left: `\s*[\r\n]+` ends after the run's last
        // line break, if it has one; else `\s+` takes the run.
        let mut run = start;
        while run < n && space(b[run]) {
            run += 1;
        }
        match b[start..run].iter().rposition(|&x| newline(x)) {
            Some(last) => start + last + 1,
            None => run,
        }
    }

    /// `(?i:'s|'t|'re|'ve|'m|'ll|'d)?` at `i`: where it ends.
    fn contraction(b: &[u8], i: usize) -> usize {
        let at = |k: usize| b.get(k).map(u8::to_ascii_lowercase);
        if b.get(i) != Some(&b'\'') {
            return i;
        }
        match (at(i + 1), at(i + 2)) {
            (Some(b's' | b't' | b'm' | b'd'), _) => i + 2,
            (Some(b'r' | b'v'), Some(b'e')) | (Some(b'l'), Some(b'l')) => i + 3,
            _ => i,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(pattern: &str, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        Splitter::new(pattern).unwrap().pieces(text, |p| out.push(p.to_owned()));
        out
    }

    #[test]
    fn whitespace_before_a_word_joins_the_word() {
        for pattern in [O200K, CL100K] {
            assert_eq!(split(pattern, "a   b"), ["a", "  ", " b"]);
            assert_eq!(split(pattern, "a b "), ["a", " b", " "]);
            assert_eq!(split(pattern, "a\t\tb"), ["a", "\t", "\tb"]);
            assert_eq!(split(pattern, "a \n  b"), ["a", " \n", " ", " b"]);
            assert_eq!(split(pattern, "x  "), ["x", "  "]);
        }
        assert_eq!(split(O200K, "he's 123456"), ["he's", " ", "123", "456"]);
    }

    /// Every ASCII byte that the pattern's classes tell apart, and words and
    /// contractions in every case.
    const PARTS: &[&str] = &[
        "a", "z", "A", "Z", "he", "HE", "He", "hE", "'", "'s", "'S", "'t", "'re", "'RE", "'Ve", "'m", "'ll",
        "'lL", "'d", "'x", "'r", "'l", "0", "7", "12", "4567", " ", "  ", "\t", "\n", "\r", "\r\n", "\x0b",
        "\x0c", "/", "//", "!", ".", ",", "-", "_", "\x00", "\x01", "\x7f", "~", "#", "\\", "\"",
    ];

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]

        /// From every place in ASCII text, the hand-written o200k match ends
        /// where the regex's does.
        #[test]
        fn ascii_matches_end_where_the_regex_does(
            parts in proptest::collection::vec(proptest::sample::select(PARTS), 0..24)
        ) {
            let text = parts.concat();
            let splitter = Splitter::new(O200K).unwrap();
            for start in 0..text.len() {
                proptest::prop_assert_eq!(
                    ascii::o200k_end(text.as_bytes(), start),
                    splitter.regex_end(&text, start),
                    "{:?} from {}", text, start
                );
            }
        }
    }

    #[test]
    fn non_ascii_text_goes_to_the_regex() {
        let splitter = Splitter::new(O200K).unwrap();
        let mut pieces = Vec::new();
        splitter.pieces("caf\u{e9}'s d\u{e9}j\u{e0} vu", |p| pieces.push(p.to_owned()));
        assert_eq!(pieces, ["caf\u{e9}'s", " d\u{e9}j\u{e0}", " vu"]);
    }
}
