//! The view of a text the rules match on, so a secret disguised with invisible or
//! look-alike characters is still found: zero-width and other invisible characters
//! are removed, characters whose compatibility form (NFKC) is ASCII are folded to it
//! (fullwidth `ｇｈｐ＿`, ligatures, no-break spaces), and percent-encoded unreserved
//! characters are decoded (`ghp%5F...`). A map leads every offset in the view back to
//! the original, so a finding redacts the original span and the text around it is
//! never rewritten.
//!
//! Plain ASCII without `%` (most text) has no view: it is matched as it is.

use std::sync::OnceLock;
use unicode_normalization::char::decompose_compatible;

/// A folded text and the way back to the original's offsets.
pub(crate) struct Folded {
    pub text: String,
    /// Pieces of the view in order: each starts at `view` in the view and at `orig`
    /// in the original, and either copies the original byte for byte or replaces
    /// one unit of it (a character or a `%XX`) with other bytes, possibly none.
    pieces: Vec<Piece>,
    orig_len: usize,
}

#[derive(Clone, Copy, Debug)]
struct Piece {
    view: usize,
    orig: usize,
    copied: bool,
}

/// The view of `text`, or `None` when it would be `text` itself.
pub(crate) fn fold(text: &str) -> Option<Folded> {
    if text.is_ascii() && !text.contains('%') {
        return None;
    }
    let mut out = String::new();
    let mut pieces: Vec<Piece> = Vec::new();
    // The start of the run of original bytes not yet copied to `out`.
    let mut copy_from = 0;
    let mut scratch = String::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        // Runs of plain ASCII are copied as they are: skip to the next byte that
        // may change.
        match next_special(bytes, i) {
            Some(at) => i = at,
            None => break,
        }
        let b = bytes[i];
        let (unit_len, replaced) = if b == b'%' {
            match percent_unreserved(bytes, i) {
                Some(c) => {
                    scratch.clear();
                    scratch.push(char::from(c));
                    (3, true)
                }
                None => (1, false),
            }
        } else if b < 0x80 {
            (1, false)
        } else {
            let c = text[i..].chars().next().unwrap_or('\u{FFFD}');
            (c.len_utf8(), fold_char(c, &mut scratch))
        };
        if replaced {
            if copy_from < i {
                pieces.push(Piece { view: out.len(), orig: copy_from, copied: true });
                out.push_str(&text[copy_from..i]);
            }
            pieces.push(Piece { view: out.len(), orig: i, copied: false });
            out.push_str(&scratch);
            copy_from = i + unit_len;
        }
        i += unit_len;
    }
    if pieces.is_empty() {
        return None;
    }
    if copy_from < text.len() {
        pieces.push(Piece { view: out.len(), orig: copy_from, copied: true });
        out.push_str(&text[copy_from..]);
    }
    Some(Folded { text: out, pieces, orig_len: text.len() })
}

/// The offset of the first byte at or after `from` that is non-ASCII or `%`: eight
/// bytes at a time, since most of most texts is plain ASCII.
fn next_special(bytes: &[u8], from: usize) -> Option<usize> {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const ONES: u64 = 0x0101_0101_0101_0101;
    const PERCENT: u64 = 0x2525_2525_2525_2525;
    let mut i = from;
    while let Some(chunk) = bytes.get(i..i + 8) {
        let word = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
        // A byte equal to `%` is a zero byte of `word ^ PERCENT`.
        let x = word ^ PERCENT;
        if (word | (x.wrapping_sub(ONES) & !x)) & HIGH != 0 {
            break;
        }
        i += 8;
    }
    bytes[i..].iter().position(|&b| b >= 0x80 || b == b'%').map(|n| i + n)
}

/// Whether `c` changes in the view; if so its replacement is left in `out`.
fn fold_char(c: char, out: &mut String) -> bool {
    out.clear();
    if is_invisible(c) {
        return true;
    }
    if !folds_to_ascii(c) {
        return false;
    }
    let mut ascii = true;
    decompose_compatible(c, |d| {
        ascii &= d.is_ascii();
        out.push(d);
    });
    // Only folds that end in ASCII matter (secrets are ASCII), and keeping every
    // other character as it is keeps the view of ordinary prose identical.
    ascii && !out.is_empty()
}

/// Whether the compatibility decomposition of `c` is ASCII: one bit per character
/// of the first two planes (16 KiB), computed once, so ordinary non-ASCII text
/// (accents, curly quotes, CJK, emoji) costs a bit test per character instead of
/// a decomposition.
fn folds_to_ascii(c: char) -> bool {
    const PLANES: usize = 0x2_0000;
    static TABLE: OnceLock<Vec<u64>> = OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut bits = vec![0u64; PLANES / 64];
        for code in 0x80..PLANES as u32 {
            let Some(c) = char::from_u32(code) else {
                continue;
            };
            let (mut ascii, mut same) = (true, true);
            decompose_compatible(c, |d| {
                ascii &= d.is_ascii();
                same &= d == c;
            });
            if ascii && !same {
                bits[code as usize / 64] |= 1 << (code % 64);
            }
        }
        bits
    });
    let code = c as usize;
    code < PLANES && table[code / 64] & (1 << (code % 64)) != 0
}

/// Characters that render as nothing and can hide inside a token.
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}' // soft hyphen
            | '\u{034F}' // combining grapheme joiner
            | '\u{061C}' // Arabic letter mark
            | '\u{115F}' | '\u{1160}' // Hangul fillers
            | '\u{17B4}' | '\u{17B5}'
            | '\u{180B}'..='\u{180F}' // Mongolian variation selectors and vowel separator
            | '\u{200B}'..='\u{200F}' // zero-width space, joiners, direction marks
            | '\u{202A}'..='\u{202E}' // bidi embeddings and overrides
            | '\u{2060}'..='\u{2064}' // word joiner, invisible operators
            | '\u{2066}'..='\u{206F}' // bidi isolates, deprecated format characters
            | '\u{3164}' // Hangul filler
            | '\u{FE00}'..='\u{FE0F}' // variation selectors
            | '\u{FEFF}' // zero-width no-break space (BOM)
            | '\u{FFA0}' // halfwidth Hangul filler
            | '\u{E0000}'..='\u{E007F}' // tags
    )
}

/// `%XX` at `i` decoding to an RFC 3986 unreserved character (letters, digits,
/// `-._~`): the ones whose encoding only disguises text. Reserved characters such as
/// `%2F` or `%40` change a URL's meaning and are left encoded.
fn percent_unreserved(bytes: &[u8], i: usize) -> Option<u8> {
    let hex = |b: u8| char::from(b).to_digit(16);
    let hi = hex(*bytes.get(i + 1)?)?;
    let lo = hex(*bytes.get(i + 2)?)?;
    let c = u8::try_from(hi * 16 + lo).ok()?;
    (c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~')).then_some(c)
}

impl Folded {
    /// The piece holding view byte `at` (`at` < the view's length).
    fn piece(&self, at: usize) -> usize {
        // The last piece starting at or before `at`; a piece that replaced a unit with
        // nothing shares its start with the next one, which this skips.
        self.pieces.partition_point(|p| p.view <= at) - 1
    }

    /// The original offset where the view span starting at `start` starts.
    pub(crate) fn orig_start(&self, start: usize) -> usize {
        if start >= self.text.len() {
            return self.orig_len;
        }
        let p = self.pieces[self.piece(start)];
        if p.copied {
            p.orig + (start - p.view)
        } else {
            p.orig
        }
    }

    /// The original offset where the view span ending at `end` (exclusive) ends.
    pub(crate) fn orig_end(&self, end: usize) -> usize {
        if end == 0 {
            return self.orig_start(0);
        }
        let i = self.piece(end - 1);
        let p = self.pieces[i];
        if p.copied {
            p.orig + (end - p.view)
        } else {
            // The whole unit goes: its end is where the next piece starts.
            self.pieces.get(i + 1).map_or(self.orig_len, |n| n.orig)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(text: &str) -> String {
        fold(text).map_or_else(|| text.to_owned(), |f| f.text)
    }

    #[test]
    fn plain_text_has_no_view() {
        assert!(fold("plain ascii, 100 percent").is_none());
        assert!(fold("Schlüssel — “quoted” 日本語 😀").is_none());
        assert!(fold("50% off, a%20b, %2F stays").is_none());
    }

    #[test]
    fn special_bytes_are_found_at_any_alignment() {
        for len in 0..40 {
            for at in 0..len {
                for special in [b'%', 0xC3] {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = special;
                    for from in 0..=at {
                        assert_eq!(next_special(&bytes, from), Some(at), "{len} {at} {from}");
                    }
                    assert_eq!(next_special(&bytes, at + 1), None);
                }
            }
        }
        // Bytes next to `%` in value (`$`, `&`) are not mistaken for it.
        assert_eq!(next_special(b"$$$$&&&&$&$&$&$&", 0), None);
    }

    #[test]
    fn disguises_are_removed() {
        assert_eq!(view("ghp_ab\u{200B}cd"), "ghp_abcd");
        assert_eq!(view("ｇｈｐ＿abcd"), "ghp_abcd");
        assert_eq!(view("ghp%5Fabcd"), "ghp_abcd");
        assert_eq!(view("pass\u{00A0}word\u{FEFF}"), "pass word");
        assert_eq!(view("ﬁle ½"), "file ½");
    }

    #[test]
    fn spans_map_back_to_the_original() {
        let text = "é ｇｈｐ＿ab\u{200B}cd%5Fx end";
        let f = fold(text).unwrap();
        let start = f.text.find("ghp").unwrap();
        let end = f.text.find(" end").unwrap();
        let (s, e) = (f.orig_start(start), f.orig_end(end));
        assert_eq!(&text[s..e], "ｇｈｐ＿ab\u{200B}cd%5Fx");
        // A span inside a copied run maps byte for byte.
        let at = f.text.find("end").unwrap();
        assert_eq!(&text[f.orig_start(at)..f.orig_end(at + 3)], "end");
        // A span ending inside a unit that folded to several bytes takes the unit.
        let g = fold("a™b").unwrap();
        assert_eq!(g.text, "aTMb");
        assert_eq!(g.orig_end(2), "a™".len());
    }
}
