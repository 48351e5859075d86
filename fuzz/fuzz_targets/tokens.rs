//! `TokenCounter::count` on arbitrary text: no panic, no stall on long runs, and
//! never more tokens than bytes (every token covers at least one byte).
#![no_main]

use std::sync::OnceLock;

use _core::config::TokenizerSpec;
use _core::tokens::TokenCounter;
use libfuzzer_sys::fuzz_target;

fn counters() -> &'static [TokenCounter; 2] {
    static C: OnceLock<[TokenCounter; 2]> = OnceLock::new();
    C.get_or_init(|| {
        [
            TokenCounter::load(&TokenizerSpec::O200k).unwrap(),
            TokenCounter::load(&TokenizerSpec::Cl100k).unwrap(),
        ]
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let text = String::from_utf8_lossy(rest);
    // Repeat short inputs into long unbroken runs now and then.
    let text = if pick & 0x80 != 0 && !text.is_empty() {
        text.repeat(1 + 20_000 / text.len()).into()
    } else {
        text
    };
    let counter = &counters()[usize::from(pick & 1)];
    let n = counter.count(&text);
    assert!(n as usize <= text.len(), "{n} tokens for {} bytes", text.len());
    assert_eq!(n == 0, text.is_empty());
});
