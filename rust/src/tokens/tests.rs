//! Our counts against tiktoken-rs's, the oracle, on a wide corpus.

use tiktoken_rs::CoreBPE;

use super::*;

#[path = "../../tests/common/mod.rs"]
mod common;

fn vocabularies() -> [(&'static str, &'static Bpe, &'static CoreBPE); 2] {
    [
        ("o200k", Bpe::o200k(), tiktoken_rs::o200k_base_singleton()),
        ("cl100k", Bpe::cl100k(), tiktoken_rs::cl100k_base_singleton()),
    ]
}

/// Counts every text both ways, whole (up to 8 KB) and through
/// `TokenCounter::count`'s chunking, and fails listing the first texts that differ.
fn assert_exact<S: AsRef<str>>(texts: &[S]) {
    for (name, ours, oracle) in vocabularies() {
        let counter = TokenCounter::Tiktoken(match name {
            "o200k" => Bpe::o200k,
            _ => Bpe::cl100k,
        });
        let mut wrong = Vec::new();
        for text in texts {
            let text = text.as_ref();
            let chunked: usize = pieces(text).map(|p| oracle.encode_ordinary(p).len()).sum();
            let got = counter.count(text) as usize;
            // Whole, long runs are quadratic in both; `pieces` is what bounds them.
            let (whole, got_whole) = if text.len() <= 8192 {
                (oracle.encode_ordinary(text).len(), ours.count(text))
            } else {
                (chunked, got)
            };
            if got_whole != whole || got != chunked {
                wrong.push(format!("{text:?}: {got_whole}/{got} vs {whole}/{chunked}"));
            }
        }
        let total = wrong.len();
        wrong.truncate(20);
        assert!(total == 0, "{name}: {total} of {} differ:\n{}", texts.len(), wrong.join("\n"));
    }
}

#[test]
fn vocabularies_match_tiktoken_token_for_token() {
    for (name, ours, oracle) in vocabularies() {
        let mut id = 0;
        while let Ok(bytes) = ours.decode_bytes(&[id]) {
            assert_eq!(Some(bytes), oracle.decode_bytes(&[id]).ok(), "{name} {id}");
            id += 1;
        }
        assert!(id > 100_000 && oracle.decode_bytes(&[id]).is_err(), "{name} {id}");
    }
}

#[test]
fn locomo_turns_count_exactly() {
    let turns = common::locomo_turns();
    // Whole conversations too, long enough for `pieces` to cut them.
    let joined: Vec<String> = turns.chunks(300).map(|c| c.join("\n")).collect();
    assert_exact(&turns);
    assert_exact(&joined);
}

#[test]
fn contractions_in_every_case_count_exactly() {
    let mut texts = Vec::new();
    for suffix in ["s", "t", "re", "ve", "m", "ll", "d", "x", "S", "ſ"] {
        for cased in case_variants(suffix) {
            for word in ["", "he", "HE", "He", "don", "DoN", "I", "1", "é", "ΑΒ", " ", "a b"] {
                for apostrophe in ["'", "’", "''"] {
                    for after in ["", " ", "s", "!", "\n", "x y", "1"] {
                        texts.push(format!("{word}{apostrophe}{cased}{after}"));
                    }
                }
            }
        }
    }
    assert_exact(&texts);
}

fn case_variants(word: &str) -> Vec<String> {
    let chars: Vec<char> = word.chars().collect();
    (0..1u32 << chars.len())
        .map(|mask| {
            let flip = |(i, c): (usize, &char)| {
                if mask >> i & 1 == 1 {
                    c.to_uppercase().collect::<String>()
                } else {
                    c.to_string()
                }
            };
            chars.iter().enumerate().map(flip).collect()
        })
        .collect()
}

#[test]
fn scripts_digits_and_whitespace_count_exactly() {
    let mut texts: Vec<String> = [
        "hello world",
        "你好，世界！我们今天去公园散步吧。",
        "日本語のテキストです。カタカナとひらがな",
        "안녕하세요 세계, GPT-4o는 빠릅니다",
        "👍🏽 👨‍👩‍👧‍👦 🇺🇸 ❤️ hello 😀 world 😀😀😀",
        "e\u{301} cafe\u{301} z̷̢̛̩͚a̵l̸g̷o̶ \u{301}abc \u{301} a\u{301}\u{302}\u{303}",
        "नमस्ते दुनिया สวัสดีครับ مَرْحَبًا بِالعَالَم שָׁלוֹם",
        "Ünïcödé ÀÉÎÕÜ ß ẞ ǅungla ǈ ʰʲ ᵃ ℌ ℍ",
        "3.14159 1,000,000 $12.50 2024-05-08 ١٢٣٤٥ １２３４ ²³ Ⅻ ½ ⅞",
        "a\r\nb\r\n\r\n  c\n\n\nd \n e\t\tf   g   \n",
        "  leading and trailing  \t ",
        "a\u{a0}b\u{3000}c\u{2028}d\u{85}e\u{b}\u{c}f \u{200b}g",
        "!!! ... ?!?! --- ((())) a/b/c\n/ // /\n\n",
        "```rust\nfn main() {\n    println!(\"hi\");\n}\n```",
        "<|endoftext|> <|fim_prefix|> {\"key\": [1, 2, 3], \"v\": null}",
        "https://example.com/path?q=1&r=two#frag user@example.org",
        "\t\n \r \r\n\t",
    ]
    .map(str::to_owned)
    .to_vec();
    let digits = "12345678901234567890";
    for len in 1..=digits.len() {
        for (before, after) in [("", ""), (" ", " "), ("a", "b"), ("$", "%"), ("x ", ".5")] {
            texts.push(format!("{before}{}{after}", &digits[..len]));
        }
    }
    for spaces in 0..6 {
        for ws in [" ", "\t", "\n", "\r\n", " \n", "\u{3000}"] {
            let run = ws.repeat(spaces);
            texts.push(format!("word{run}word"));
            texts.push(format!("{run}word"));
            texts.push(format!("word{run}"));
            texts.push(format!("1{run}!{run}é{run}"));
        }
    }
    assert_exact(&texts);
}

/// Every string of up to five characters over an alphabet that exercises each
/// alternative of both patterns and the borders between them.
#[test]
fn short_strings_count_exactly() {
    let alphabet = [' ', '\t', '\n', '\r', 'a', 'S', '!', '/', '1', '\'', '\u{301}'];
    let mut texts = vec![String::new()];
    let mut last = vec![String::new()];
    for _ in 0..5 {
        last = last.iter().flat_map(|s| alphabet.iter().map(move |c| format!("{s}{c}"))).collect();
        texts.extend(last.iter().cloned());
    }
    assert_exact(&texts);
}

#[test]
fn random_unicode_counts_exactly() {
    let mut rng = SplitMix(0x00C0_FFEE);
    let words = ["the", " The", "'s", "'LL", "’re", " 42", "ing", "\r\n", "  ", "🙂", "字"];
    let texts: Vec<String> = (0..4000)
        .map(|_| {
            let len = rng.below(40);
            (0..len)
                .map(|_| match rng.below(12) {
                    0..=3 => char::from(0x20 + rng.below(0x5f) as u8).to_string(),
                    4 => [' ', '\t', '\n', '\r', '\u{a0}', '\u{2003}'][rng.below(6)].to_string(),
                    5 => words[rng.below(words.len())].to_owned(),
                    6 => pick(&mut rng, 0xC0..0x250),
                    7 => pick(&mut rng, 0x300..0x370),
                    8 => pick(&mut rng, 0x370..0x530),
                    9 => pick(&mut rng, 0x4E00..0xA000),
                    10 => pick(&mut rng, 0x1F300..0x1FB00),
                    _ => pick(&mut rng, 0..0x11_0000),
                })
                .collect()
        })
        .collect();
    assert_exact(&texts);
}

fn pick(rng: &mut SplitMix, range: std::ops::Range<u32>) -> String {
    let c = range.start + rng.below((range.end - range.start) as usize) as u32;
    char::from_u32(c).unwrap_or('\u{fffd}').to_string()
}

struct SplitMix(u64);

impl SplitMix {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) % n as u64) as usize
    }
}

#[test]
fn long_runs_are_counted_fast_and_close() {
    let counter = TokenCounter::load(&TokenizerSpec::O200k).unwrap();
    let prose = "the deploy failed because of a missing env var. ".repeat(2000);
    let whole = tiktoken_rs::o200k_base_singleton().encode_ordinary(&prose).len();
    assert_eq!(counter.count(&prose) as usize, whole);
    let run = "z".repeat(2_000_000);
    let n = counter.count(&run);
    assert!(n > 0 && n < 2_000_000);
    let mixed = format!("é{}ü", "ß".repeat(10_000));
    assert!(counter.count(&mixed) > 0);
    assert_exact(&[run, mixed, "ab ".repeat(5000), format!(" {} ", "q".repeat(8000))]);
}

#[test]
fn o200k_counts_are_exact() {
    let counter = TokenCounter::load(&TokenizerSpec::O200k).unwrap();
    assert_eq!(counter.count(""), 0);
    assert_eq!(counter.count("hello world"), 2);
    assert!(counter.count("the deploy failed: missing env var") >= 6);
}
