//! A BPE vocabulary held compactly: every token's bytes in one blob, in rank
//! order, and an open-addressing table of ranks keyed by those bytes.
//!
//! o200k takes about 4 MB this way, against some 38 MB for a
//! `HashMap<Vec<u8>, Rank>` plus its reverse map.

/// Ranks fit in 18 bits (o200k has 199,998 tokens); the other 14 bits of a
/// slot hold a tag of the key's hash, so most misses never touch the blob.
const RANK_BITS: u32 = 18;
const RANK_MASK: u32 = (1 << RANK_BITS) - 1;
const EMPTY: u32 = u32::MAX;

pub(super) struct Vocab {
    /// Token `r` is `bytes[starts[r]..starts[r + 1]]`.
    bytes: Box<[u8]>,
    starts: Box<[u32]>,
    /// `EMPTY`, or `tag << RANK_BITS | rank`; the length is a power of two.
    slots: Box<[u32]>,
    /// Shifts a hash down to a slot index (its top bits).
    shift: u32,
}

impl Vocab {
    /// Parses a `.tiktoken` file: one `base64(token) rank` line per token, with
    /// ranks dense from 0 in line order (true of every OpenAI vocabulary).
    pub(super) fn parse(text: &str) -> Result<Self, String> {
        let lines = text.lines().filter(|line| !line.is_empty());
        let mut bytes = Vec::with_capacity(text.len() / 2);
        let mut starts = vec![0u32];
        for (line_no, line) in lines.enumerate() {
            let (token, rank) = line
                .split_once(' ')
                .ok_or_else(|| format!("line {}: no rank", line_no + 1))?;
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
        let capacity = (2 * n).next_power_of_two().max(2);
        let mut vocab = Vocab {
            bytes: bytes.into_boxed_slice(),
            starts: starts.into_boxed_slice(),
            slots: vec![EMPTY; capacity].into_boxed_slice(),
            shift: 64 - capacity.trailing_zeros(),
        };
        for rank in 0..n as u32 {
            let (mut i, tag) = vocab.home(vocab.token(rank));
            while vocab.slots[i] != EMPTY {
                if vocab.token(vocab.slots[i] & RANK_MASK) == vocab.token(rank) {
                    return Err(format!("token {rank} is a duplicate"));
                }
                i = (i + 1) & (capacity - 1);
            }
            vocab.slots[i] = tag | rank;
        }
        Ok(vocab)
    }

    pub(super) fn len(&self) -> usize {
        self.starts.len() - 1
    }

    /// The bytes of token `rank`, which must be below `len()`.
    pub(super) fn token(&self, rank: u32) -> &[u8] {
        let rank = rank as usize;
        &self.bytes[self.starts[rank] as usize..self.starts[rank + 1] as usize]
    }

    /// The rank of the token spelled `piece`, if there is one.
    #[inline]
    pub(super) fn rank(&self, piece: &[u8]) -> Option<u32> {
        let (mut i, tag) = self.home(piece);
        loop {
            let slot = self.slots[i];
            if slot == EMPTY {
                return None;
            }
            if slot & !RANK_MASK == tag && same(self.token(slot & RANK_MASK), piece) {
                return Some(slot & RANK_MASK);
            }
            i = (i + 1) & (self.slots.len() - 1);
        }
    }

    /// The first slot to probe for `key`, and the tag its slot carries.
    #[inline]
    fn home(&self, key: &[u8]) -> (usize, u32) {
        let h = hash(key);
        ((h >> self.shift) as usize, (h as u32) << RANK_BITS)
    }
}

/// Slice equality without a `memcmp` call: keys are a few bytes long.
#[inline]
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// A fast, seedless hash for short byte strings (wyhash-style folded multiply);
/// the keys are fixed, so no protection against chosen collisions is needed.
#[inline]
fn hash(bytes: &[u8]) -> u64 {
    const K0: u64 = 0x9E37_79B9_7F4A_7C15;
    const K1: u64 = 0xA076_1D64_78BD_642F;
    let mut h = (bytes.len() as u64).wrapping_mul(K0);
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        h = fold(h ^ u64::from_le_bytes(word), K1);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut word = [0u8; 8];
        word[..rest.len()].copy_from_slice(rest);
        h = fold(h ^ u64::from_le_bytes(word), K1);
    }
    fold(h, K0)
}

#[inline]
fn fold(a: u64, b: u64) -> u64 {
    let product = u128::from(a) * u128::from(b);
    (product as u64) ^ ((product >> 64) as u64)
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
    let text = text
        .strip_suffix(b"==")
        .or_else(|| text.strip_suffix(b"="))
        .unwrap_or(text);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_decodes_every_padding() {
        let mut out = Vec::new();
        for (text, bytes) in [
            ("IQ==", &b"!"[..]),
            ("IGE=", b" a"),
            ("IGFi", b" ab"),
            ("", b""),
        ] {
            out.clear();
            decode_base64(text.as_bytes(), &mut out).unwrap();
            assert_eq!(out, bytes);
        }
        assert!(decode_base64(b"I*==", &mut out).is_none());
        assert!(decode_base64(b"IGFiY", &mut out).is_none());
    }

    #[test]
    fn ranks_round_trip_and_bad_files_fail() {
        let vocab = Vocab::parse("YQ== 0\nYg== 1\nYWI= 2\n").unwrap();
        assert_eq!(vocab.len(), 3);
        assert_eq!(vocab.rank(b"ab"), Some(2));
        assert_eq!(vocab.rank(b"a"), Some(0));
        assert_eq!(vocab.rank(b"ba"), None);
        assert_eq!(vocab.token(2), b"ab");
        assert!(Vocab::parse("YQ== 1\n").is_err());
        assert!(Vocab::parse("YQ== 0\nYQ== 1\n").is_err());
        assert!(Vocab::parse("YQ==\n").is_err());
    }
}
