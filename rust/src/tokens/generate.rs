//! Builds the vocabulary images in `data/` from the `.tiktoken` files, which
//! stay the source of truth; only the tests read the text.
//!
//! After changing the image layout or the hash, rewrite the images with
//! `cargo test --lib tokens::generate -- --ignored write_images`.

use std::path::PathBuf;

use super::vocab::{home, Vocab, EMPTY, MAGIC, RANK_BITS, RANK_MASK};

/// Each built-in vocabulary: its `.tiktoken` text and its checked-in image.
const BUILT_IN: [(&str, &str, &[u8]); 2] = [
    ("o200k_base", include_str!("data/o200k_base.tiktoken"), include_bytes!("data/o200k_base.bin")),
    ("cl100k_base", include_str!("data/cl100k_base.tiktoken"), include_bytes!("data/cl100k_base.bin")),
];

/// The image of a `.tiktoken` file: one `base64(token) rank` line per token,
/// with ranks dense from 0 in line order (true of every OpenAI vocabulary).
pub(super) fn image(text: &str) -> Result<Vec<u8>, String> {
    let lines = text.lines().filter(|line| !line.is_empty());
    let mut bytes = Vec::with_capacity(text.len() / 2);
    let mut starts = vec![0u32];
    for (line_no, line) in lines.enumerate() {
        let (token, rank) = line.split_once(' ').ok_or_else(|| format!("line {}: no rank", line_no + 1))?;
        if rank.parse::<usize>().ok() != Some(line_no) {
            return Err(format!("line {}: rank {rank} is out of order", line_no + 1));
        }
        decode_base64(token.as_bytes(), &mut bytes)
            .ok_or_else(|| format!("line {}: bad base64", line_no + 1))?;
        let end = u32::try_from(bytes.len()).map_err(|_| "vocabulary too large")?;
        starts.push(end);
    }
    let n = starts.len() - 1;
    if n >= RANK_MASK as usize {
        return Err(format!("{n} tokens do not fit in {RANK_BITS} bits"));
    }
    let token = |rank: u32| &bytes[starts[rank as usize] as usize..starts[rank as usize + 1] as usize];
    // Load factor at most one half keeps the linear probes short.
    let capacity = (2 * n).next_power_of_two().max(2);
    let shift = 64 - capacity.trailing_zeros();
    let mut slots = vec![EMPTY; capacity];
    for rank in 0..n as u32 {
        let (mut i, tag) = home(token(rank), shift);
        while slots[i] != EMPTY {
            if token(slots[i] & RANK_MASK) == token(rank) {
                return Err(format!("token {rank} is a duplicate"));
            }
            i = (i + 1) & (capacity - 1);
        }
        slots[i] = tag | rank;
    }
    let words = [n, capacity].map(|w| w as u32);
    let mut out = MAGIC.to_vec();
    for w in words.iter().chain(&starts).chain(&slots) {
        out.extend_from_slice(&w.to_le_bytes());
    }
    out.extend_from_slice(&bytes);
    Ok(out)
}

/// Standard base64 with padding, appended to `out`; `None` on a bad character.
fn decode_base64(text: &[u8], out: &mut Vec<u8>) -> Option<()> {
    fn sextet(c: u8) -> Option<u32> {
        Some(u32::from(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        }))
    }
    let text = text.strip_suffix(b"==").or_else(|| text.strip_suffix(b"=")).unwrap_or(text);
    let mut chunks = text.chunks(4);
    for chunk in &mut chunks {
        let mut bits = 0u32;
        for &c in chunk {
            bits = bits << 6 | sextet(c)?;
        }
        let full = bits << (6 * (4 - chunk.len()));
        let [_, a, b, c] = full.to_be_bytes();
        match chunk.len() {
            4 => out.extend_from_slice(&[a, b, c]),
            3 => out.extend_from_slice(&[a, b]),
            2 => out.push(a),
            _ => return None,
        }
    }
    Some(())
}

fn data_dir() -> PathBuf {
    // `file!()` is relative to the package root, where Cargo.toml is.
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(file!()).with_file_name("data")
}

/// The images are generated output: they must be exactly what the text gives.
#[test]
fn checked_in_images_match_the_tiktoken_files() {
    for (name, text, checked_in) in BUILT_IN {
        let built = image(text).unwrap();
        assert!(
            built == checked_in,
            "data/{name}.bin is stale: run `cargo test --lib tokens::generate -- --ignored write_images`"
        );
    }
}

#[test]
#[ignore = "writes data/*.bin; run after changing the image layout or the hash"]
fn write_images() {
    for (name, text, _) in BUILT_IN {
        let path = data_dir().join(format!("{name}.bin"));
        std::fs::write(&path, image(text).unwrap()).unwrap();
    }
}

#[test]
fn base64_decodes_every_padding() {
    let mut out = Vec::new();
    for (text, bytes) in [("IQ==", &b"!"[..]), ("IGE=", b" a"), ("IGFi", b" ab"), ("", b"")] {
        out.clear();
        decode_base64(text.as_bytes(), &mut out).unwrap();
        assert_eq!(out, bytes);
    }
    assert!(decode_base64(b"I*==", &mut out).is_none());
    assert!(decode_base64(b"IGFiY", &mut out).is_none());
}

#[test]
fn ranks_round_trip_and_bad_files_fail() {
    let built = image("YQ== 0\nYg== 1\nYWI= 2\n").unwrap();
    let vocab = Vocab::new(&built).unwrap();
    assert_eq!(vocab.len(), 3);
    assert_eq!(vocab.rank(b"ab"), Some(2));
    assert_eq!(vocab.rank(b"a"), Some(0));
    assert_eq!(vocab.rank(b"ba"), None);
    assert_eq!(vocab.token(2), b"ab");
    assert!(image("YQ== 1\n").is_err());
    assert!(image("YQ== 0\nYQ== 1\n").is_err());
    assert!(image("YQ==\n").is_err());
}

#[test]
fn bad_images_fail() {
    let built = image("YQ== 0\nYg== 1\nYWI= 2\n").unwrap();
    assert!(Vocab::new(&built[..built.len() - 1]).is_err());
    assert!(Vocab::new(&built[..20]).is_err());
    assert!(Vocab::new(&built[1..]).is_err());
    assert!(Vocab::new(b"").is_err());
    let empty = image("").unwrap();
    assert_eq!(Vocab::new(&empty).unwrap().rank(b"a"), None);
}
