//! `Scrubber::scrub` on arbitrary text, with its documented invariants: idempotent,
//! borrowed exactly when nothing is found, findings sorted, disjoint, on char
//! boundaries; placeholders never re-match.
#![no_main]

use std::borrow::Cow;

use _core::scrub::{ScrubOptions, Scrubber};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else { return };
    let text = String::from_utf8_lossy(rest);
    let scrubber = Scrubber::new(ScrubOptions { secrets: flags & 1 == 0, pii: flags & 2 != 0 });
    let found = scrubber.findings(&text);
    let mut prev_end = 0;
    for f in &found {
        assert!(f.start < f.end && f.end <= text.len(), "{f:?}");
        assert!(f.start >= prev_end, "findings overlap or are unsorted: {found:?}");
        assert!(text.is_char_boundary(f.start) && text.is_char_boundary(f.end));
        prev_end = f.end;
    }
    let once = scrubber.scrub(&text);
    assert_eq!(matches!(once, Cow::Borrowed(_)), found.is_empty());
    let twice = scrubber.scrub(&once);
    assert_eq!(once.as_ref(), twice.as_ref(), "scrub is not idempotent");
    let mut json = serde_json_value(&text);
    scrubber.scrub_json(&mut json);
});

fn serde_json_value(text: &str) -> serde_json::Value {
    serde_json::json!({ "password": text, "note": [text, { "k": text }] })
}
