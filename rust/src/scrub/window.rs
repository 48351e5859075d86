//! Long texts: each rule runs only on the lines around its keywords, not on the
//! whole text, so a long transcript that mentions "key" twice is not scanned by a
//! dozen regexes end to end.
//!
//! A window runs from the start of a keyword's line to the end of the next line,
//! bounded so a text with no newlines still gets small windows. Rules whose
//! matches span many lines (key blocks) are marked `multiline` and never windowed.

/// Texts up to this size are searched whole: windows would not save anything.
pub(crate) const WHOLE_TEXT_MAX: usize = 4096;

/// How far back from a keyword a match may start: identifier prefixes such as
/// `spring.datasource.` and the glue of `aws ... secret`.
const BACK: usize = 256;

/// How far past a keyword a match may end: the longest tokens (JWTs, key blocks
/// aside) are a few kilobytes.
const AHEAD: usize = 8192;

/// Merged, sorted byte ranges of `text` around the keyword occurrences `hits`
/// (given as `(start, end)`, sorted by start). Ranges start and end on char
/// boundaries, and at line boundaries unless a line is longer than the bounds.
pub(crate) fn windows(
    text: &str,
    hits: impl Iterator<Item = (usize, usize)>,
) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (start, end) in hits {
        // A hit inside the current window extends it only through its next line.
        if let Some(last) = out.last_mut() {
            if start < last.1 {
                last.1 = last.1.max(window_end(text, end));
                continue;
            }
        }
        let (s, e) = (window_start(text, start), window_end(text, end));
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

fn window_start(text: &str, at: usize) -> usize {
    let lo = floor_char(text, at.saturating_sub(BACK));
    match text[lo..at].rfind('\n') {
        Some(i) => lo + i + 1,
        None if lo == 0 => 0,
        // No line start in reach: begin after a space so no match starts mid-word.
        None => text[lo..at]
            .char_indices()
            .find(|(_, c)| c.is_whitespace())
            .map_or(lo, |(i, c)| lo + i + c.len_utf8()),
    }
}

/// The end of the line after the one holding `at`, or a whitespace within reach.
fn window_end(text: &str, at: usize) -> usize {
    let hi = ceil_char(text, (at + AHEAD).min(text.len()));
    let rest = &text[at..hi];
    let line_end = rest
        .find('\n')
        .and_then(|i| rest[i + 1..].find('\n').map(|j| i + 1 + j));
    match line_end {
        Some(i) => at + i,
        None if hi == text.len() => hi,
        // No line end in reach: stop at the last space so no token is cut in half.
        None => rest.rfind(char::is_whitespace).map_or(hi, |i| at + i),
    }
}

fn floor_char(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_cover_the_keyword_line_and_the_next() {
        let text = "a\nb key c\nd\ne\nf key\n";
        let hits = [(4, 7), (16, 19)];
        let w = windows(text, hits.into_iter());
        let parts: Vec<&str> = w.iter().map(|&(s, e)| &text[s..e]).collect();
        assert_eq!(parts, ["b key c\nd", "f key\n"]);
    }

    #[test]
    fn overlapping_windows_merge() {
        let text = "key one\nkey two\nthree\nfour";
        let w = windows(text, [(0, 3), (8, 11)].into_iter());
        assert_eq!(w, [(0, 21)]);
    }

    #[test]
    fn long_lines_are_bounded_at_spaces_and_char_boundaries() {
        let text = format!("{} key {}", "é ".repeat(400), "ü ".repeat(5000));
        let at = text.find("key").unwrap();
        let w = windows(&text, [(at, at + 3)].into_iter());
        let (s, e) = w[0];
        assert!(s > 0 && e < text.len() && s <= at && e >= at + 3);
        assert!(text.is_char_boundary(s) && text.is_char_boundary(e));
    }
}
