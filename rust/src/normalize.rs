//! Content normalisation for duplicate detection.

use unicode_normalization::UnicodeNormalization;

/// NFKC with runs of whitespace collapsed to one space and the ends trimmed:
/// two texts that differ only in those ways are the same memory.
pub fn normalize(text: &str) -> String {
    let nfkc: String = text.nfkc().collect();
    nfkc.split_whitespace().collect::<Vec<_>>().join(" ")
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

    #[test]
    fn the_key_is_stable() {
        assert_eq!(content_key(""), 0x65f9_4e72_4211_1192);
    }
}
