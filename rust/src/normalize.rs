//! Content normalisation for duplicate detection.

use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};

/// NFKC with runs of whitespace collapsed to one space and the ends trimmed:
/// two texts that differ only in those ways are the same memory.
pub fn normalize(text: &str) -> String {
    // ASCII, and most other text, is NFKC already: then only spaces change.
    if text.is_ascii() || is_nfkc_quick(text.chars()) == IsNormalized::Yes {
        return collapse_spaces(text);
    }
    collapse_spaces(&text.nfkc().collect::<String>())
}

fn collapse_spaces(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// A stable 63-bit FNV-1a hash of the normalised text; stored, so it must never
/// change between versions. Equal keys are confirmed by comparing the texts.
pub fn content_key(normalized: &str) -> i64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in normalized.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    (hash >> 1) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_and_compatibility_forms_fold() {
        assert_eq!(normalize("  the\u{00a0}deploy\n\tfailed "), "the deploy failed");
        assert_eq!(normalize("ﬁle №1"), "file No1");
        assert_eq!(content_key(&normalize("a  b")), content_key("a b"));
        assert_ne!(content_key("a b"), content_key("a c"));
    }

    proptest::proptest! {
        #[test]
        fn the_fast_paths_agree_with_plain_nfkc(text in "(\\PC|\\s|\u{00a0}|\u{fb01}|\u{2116}|e\u{301}){0,40}") {
            let plain = text.nfkc().collect::<String>().split_whitespace().collect::<Vec<_>>().join(" ");
            proptest::prop_assert_eq!(normalize(&text), plain);
        }
    }

    #[test]
    fn the_key_is_stable() {
        assert_eq!(content_key(""), 0x65f9_4e72_4211_1192);
    }
}
