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
}

impl Splitter {
    pub(super) fn new(pattern: &str) -> Result<Self, String> {
        Regex::new(pattern).map(|regex| Splitter { regex }).map_err(|err| err.to_string())
    }

    /// Calls `f` on each piece of `text`, in order; the pieces tile the text.
    ///
    /// Every character starts a match of either pattern, so each search is
    /// anchored where the last piece ended (one forward scan, no reverse one).
    pub(super) fn pieces(&self, text: &str, mut f: impl FnMut(&str)) {
        let mut start = 0;
        while start < text.len() {
            let input = Input::new(text).range(start..).anchored(Anchored::Yes);
            let mut end = match self.regex.search(&input) {
                Some(found) if found.end() > start => found.end(),
                // Unreachable for these patterns; one character keeps the loop going.
                _ => start + text[start..].chars().next().map_or(1, char::len_utf8),
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
}
