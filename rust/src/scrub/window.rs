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

/// The newline offsets of a text, found once: keyword hits in a long text can be
/// dense (a secret-dense paste has one every few bytes), and looking for the next
/// line end from each of them made windowing cost a scan of `AHEAD` bytes per hit.
pub(crate) struct Lines(Vec<usize>);

impl Lines {
    pub(crate) fn new(text: &str) -> Lines {
        Lines(text.match_indices('\n').map(|(i, _)| i).collect())
    }

    /// The index in `self.0` of the first newline at or after `at`.
    fn first_from(&self, at: usize) -> usize {
        self.0.partition_point(|&p| p < at)
    }
}

/// Merged, sorted byte ranges of `text` around the keyword occurrences `hits`
/// (given as `(start, end)`, sorted by start). Ranges start and end on char
/// boundaries, and at line boundaries unless a line is longer than the bounds.
/// `lines` are the newlines of `text`.
pub(crate) fn windows(
    text: &str,
    lines: &Lines,
    hits: impl Iterator<Item = (usize, usize)>,
) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (start, end) in hits {
        // A hit inside the current window extends it only through its next line.
        if let Some(last) = out.last_mut() {
            if start < last.1 {
                last.1 = last.1.max(window_end(text, lines, end));
                continue;
            }
        }
        let (s, e) = (window_start(text, lines, start), window_end(text, lines, end));
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

fn window_start(text: &str, lines: &Lines, at: usize) -> usize {
    let lo = floor_char(text, at.saturating_sub(BACK));
    let i = lines.first_from(at);
    match i.checked_sub(1).map(|j| lines.0[j]) {
        Some(nl) if nl >= lo => nl + 1,
        _ if lo == 0 => 0,
        // No line start in reach: begin after a space so no match starts mid-word.
        _ => text[lo..at]
            .char_indices()
            .find(|(_, c)| c.is_whitespace())
            .map_or(lo, |(i, c)| lo + i + c.len_utf8()),
    }
}

/// The end of the line after the one holding `at`, or a whitespace within reach.
fn window_end(text: &str, lines: &Lines, at: usize) -> usize {
    let hi = ceil_char(text, (at + AHEAD).min(text.len()));
    let i = lines.first_from(at);
    match lines.0.get(i + 1) {
        Some(&second) if second < hi => second,
        _ if hi == text.len() => hi,
        // No line end in reach: stop at the last space so no token is cut in half.
        _ => text[at..hi].rfind(char::is_whitespace).map_or(hi, |i| at + i),
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
        let w = windows(text, &Lines::new(text), hits.into_iter());
        let parts: Vec<&str> = w.iter().map(|&(s, e)| &text[s..e]).collect();
        assert_eq!(parts, ["b key c\nd", "f key\n"]);
    }

    #[test]
    fn overlapping_windows_merge() {
        let text = "key one\nkey two\nthree\nfour";
        let w = windows(text, &Lines::new(text), [(0, 3), (8, 11)].into_iter());
        assert_eq!(w, [(0, 21)]);
    }

    #[test]
    fn long_lines_are_bounded_at_spaces_and_char_boundaries() {
        let text = format!("{} key {}", "é ".repeat(400), "ü ".repeat(5000));
        let at = text.find("key").unwrap();
        let w = windows(&text, &Lines::new(&text), [(at, at + 3)].into_iter());
        let (s, e) = w[0];
        assert!(s > 0 && e < text.len() && s <= at && e >= at + 3);
        assert!(text.is_char_boundary(s) && text.is_char_boundary(e));
    }
}
