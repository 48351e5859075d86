//! Boundaries inside a text: sentences, words and characters, as byte ranges that
//! tile the text exactly (each range ends where the next begins), so a text can be
//! cut at any of them without losing or repeating a byte.

use std::ops::Range;

/// Characters that end a sentence when followed by whitespace (or the end).
fn is_terminal(c: char) -> bool {
    matches!(c, '.' | '!' | '?' | '…' | '‼' | '⁇' | '⁈' | '⁉')
}

/// Terminals of scripts written without spaces: a boundary even with no space after.
fn is_cjk_terminal(c: char) -> bool {
    matches!(c, '。' | '！' | '？' | '｡')
}

/// Closing quotes and brackets that belong to the sentence before them.
fn is_closer(c: char) -> bool {
    matches!(c, '"' | '\'' | ')' | ']' | '}' | '”' | '’' | '»' | '›' | '」' | '』' | '）')
}

/// Abbreviations whose full stop does not end a sentence (lowercase, no dot).
const ABBREVIATIONS: &[&str] = &[
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "eg", "e.g", "ie", "i.e", "inc", "ltd",
    "co", "corp", "no", "fig", "approx", "dept", "est", "jan", "feb", "mar", "apr", "jun", "jul", "aug",
    "sep", "sept", "oct", "nov", "dec", "mt", "ft", "vol", "cf", "al", "a.m", "p.m", "u.s", "u.k",
];

/// The word just before byte `end` (letters, digits and inner dots), lowercased.
fn word_before(text: &str, end: usize) -> String {
    let head = &text[..end];
    let start = head
        .char_indices()
        .rev()
        .take_while(|&(_, c)| c.is_alphanumeric() || c == '.')
        .last()
        .map_or(end, |(i, _)| i);
    head[start..].trim_start_matches('.').to_lowercase()
}

/// Sentence ranges tiling `text`. A sentence ends after a run of terminal
/// punctuation (plus closing quotes or brackets) that is followed by whitespace,
/// and the whitespace after it belongs to it; a line break always ends one; CJK
/// full stops end one without a space. A full stop after a known abbreviation or a
/// single letter (an initial) does not.
pub fn sentences(text: &str) -> Vec<Range<usize>> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < chars.len() {
        let (pos, c) = chars[i];
        let mut cut: Option<usize> = None; // index into chars where the next sentence starts
        if c == '\n' {
            let mut j = i;
            while j < chars.len() && chars[j].1.is_whitespace() {
                j += 1;
            }
            cut = Some(j);
        } else if is_cjk_terminal(c) {
            let mut j = i + 1;
            while j < chars.len() && (is_cjk_terminal(chars[j].1) || is_closer(chars[j].1)) {
                j += 1;
            }
            while j < chars.len() && chars[j].1.is_whitespace() {
                j += 1;
            }
            cut = Some(j);
        } else if is_terminal(c) {
            let mut j = i + 1;
            while j < chars.len() && is_terminal(chars[j].1) {
                j += 1;
            }
            while j < chars.len() && is_closer(chars[j].1) {
                j += 1;
            }
            let at_end = j == chars.len();
            if at_end || chars[j].1.is_whitespace() {
                let single_dot = c == '.' && j == i + 1;
                let word = word_before(text, pos);
                let abbreviation = single_dot
                    && (ABBREVIATIONS.contains(&word.as_str())
                        || (word.chars().count() == 1 && word.chars().all(char::is_alphabetic)));
                if at_end {
                    cut = Some(j);
                } else if !abbreviation {
                    // Swallow the whitespace (line breaks included) after the sentence.
                    let mut k = j;
                    while k < chars.len() && chars[k].1.is_whitespace() {
                        k += 1;
                    }
                    cut = Some(k);
                }
            }
            if cut.is_none() {
                i = j.max(i + 1);
                continue;
            }
        }
        match cut {
            Some(j) => {
                let end = chars.get(j).map_or(text.len(), |&(p, _)| p);
                if end > start {
                    out.push(start..end);
                }
                start = end;
                i = j.max(i + 1);
            }
            None => i += 1,
        }
    }
    if start < text.len() {
        out.push(start..text.len());
    }
    out
}

/// Word ranges tiling `text`: a run of non-whitespace with the whitespace after it
/// (leading whitespace belongs to the first word).
pub fn words(text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_space = false;
    let mut seen_word = false;
    for (pos, c) in text.char_indices() {
        if c.is_whitespace() {
            in_space = true;
        } else {
            if in_space && seen_word {
                out.push(start..pos);
                start = pos;
            }
            in_space = false;
            seen_word = true;
        }
    }
    if start < text.len() {
        out.push(start..text.len());
    }
    out
}

/// One range per character.
pub fn chars(text: &str) -> Vec<Range<usize>> {
    text.char_indices().map(|(pos, c)| pos..pos + c.len_utf8()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split<'a>(text: &'a str, ranges: &[Range<usize>]) -> Vec<&'a str> {
        ranges.iter().map(|r| &text[r.clone()]).collect()
    }

    fn tiles(text: &str, ranges: &[Range<usize>]) -> bool {
        let mut at = 0;
        for r in ranges {
            if r.start != at || r.end <= r.start {
                return false;
            }
            at = r.end;
        }
        at == text.len()
    }

    #[test]
    fn sentences_split_on_terminals_and_lines() {
        let text = "We shipped it. Did it work?! Yes \"it did.\" Next\nline… done";
        let got = sentences(text);
        assert!(tiles(text, &got));
        assert_eq!(
            split(text, &got),
            ["We shipped it. ", "Did it work?! ", "Yes \"it did.\" ", "Next\n", "line… ", "done"]
        );
    }

    #[test]
    fn abbreviations_initials_and_decimals_do_not_split() {
        let text = "Dr. Smith met J. R. Tolkien at 3.30 p.m. today. See e.g. the notes. ok";
        let got = split(text, &sentences(text));
        assert_eq!(got, ["Dr. Smith met J. R. Tolkien at 3.30 p.m. today. ", "See e.g. the notes. ", "ok"]);
    }

    #[test]
    fn cjk_full_stops_split_without_spaces() {
        let text = "今日は晴れ。明日は雨！本当？";
        assert_eq!(split(text, &sentences(text)), ["今日は晴れ。", "明日は雨！", "本当？"]);
    }

    #[test]
    fn words_and_chars_tile() {
        for text in ["", "  a  b\tc\n", "one", "  ", "é ü 😀x"] {
            assert!(tiles(text, &words(text)), "{text:?}");
            assert!(tiles(text, &chars(text)), "{text:?}");
            assert!(tiles(text, &sentences(text)), "{text:?}");
        }
        assert_eq!(split("  a  b c", &words("  a  b c")), ["  a  ", "b ", "c"]);
    }
}
