//! A BPE vocabulary held compactly: every token's bytes in one blob, in rank
//! order, and an open-addressing table of ranks keyed by those bytes.
//!
//! It is built ahead of time (`generate.rs`, from the `.tiktoken` files) into
//! an image that is compiled in and read where it lies: loading costs nothing
//! per token, and the pages are file-backed, shared and touched only as used.
//! o200k's image is about 4 MB, against some 38 MB for a
//! `HashMap<Vec<u8>, Rank>` plus its reverse map.
//!
//! The image: `MAGIC`, then little-endian u32 words n, capacity, `starts`
//! (n + 1 words) and `slots` (capacity words), then the token bytes to the end. Words are read with `from_le_bytes`, which compiles to a plain load,
//! so the image needs no alignment and no `unsafe`.

/// Names the layout below and the hash; a change to either changes it.
pub(super) const MAGIC: [u8; 8] = *b"cfbpe\0\0\x01";
const HEADER: usize = MAGIC.len() + 8;

/// Ranks fit in 18 bits (o200k has 199,998 tokens); the other 14 bits of a
/// slot hold a tag of the key's hash, so most misses never touch the blob.
pub(super) const RANK_BITS: u32 = 18;
pub(super) const RANK_MASK: u32 = (1 << RANK_BITS) - 1;
pub(super) const EMPTY: u32 = u32::MAX;

pub(super) struct Vocab<'a> {
    /// Token `r` is `bytes[starts[r]..starts[r + 1]]`.
    bytes: &'a [u8],
    /// u32 words, as are `slots`.
    starts: &'a [u8],
    /// `EMPTY`, or `tag << RANK_BITS | rank`; the length is a power of two.
    slots: &'a [u8],
    mask: usize,
    /// Shifts a hash down to a slot index (its top bits).
    shift: u32,
}

impl<'a> Vocab<'a> {
    /// Views an image, checking only its header and section sizes: the
    /// built-in images are checked byte for byte against the generator by a
    /// test, and a bad one can at worst panic on a slice index.
    pub(super) fn new(image: &'a [u8]) -> Result<Self, String> {
        if image.len() < HEADER || image[..MAGIC.len()] != MAGIC {
            return Err("not a vocabulary image of this version".into());
        }
        let n = word(&image[MAGIC.len()..], 0) as usize;
        let capacity = word(&image[MAGIC.len()..], 1) as usize;
        if n >= RANK_MASK as usize || !capacity.is_power_of_two() || capacity <= n {
            return Err(format!("bad sizes: {n} tokens, {capacity} slots"));
        }
        let (starts, rest) = image[HEADER..].split_at_checked(4 * (n + 1)).ok_or("truncated starts")?;
        let (slots, bytes) = rest.split_at_checked(4 * capacity).ok_or("truncated slots")?;
        if word(starts, 0) != 0 || word(starts, n) as usize != bytes.len() {
            return Err("token bytes do not match their starts".into());
        }
        Ok(Vocab { bytes, starts, slots, mask: capacity - 1, shift: 64 - capacity.trailing_zeros() })
    }

    pub(super) fn len(&self) -> usize {
        self.starts.len() / 4 - 1
    }

    /// The bytes of token `rank`, which must be below `len()`.
    #[inline]
    pub(super) fn token(&self, rank: u32) -> &'a [u8] {
        let rank = rank as usize;
        let (start, end) = (word(self.starts, rank), word(self.starts, rank + 1));
        &self.bytes[start as usize..end as usize]
    }

    /// The rank of the token spelled `piece`, if there is one.
    #[inline]
    pub(super) fn rank(&self, piece: &[u8]) -> Option<u32> {
        let (mut i, tag) = home(piece, self.shift);
        loop {
            let slot = word(self.slots, i);
            if slot == EMPTY {
                return None;
            }
            if slot & !RANK_MASK == tag && same(self.token(slot & RANK_MASK), piece) {
                return Some(slot & RANK_MASK);
            }
            i = (i + 1) & self.mask;
        }
    }
}

/// Word `i` of a little-endian u32 array.
#[inline]
fn word(words: &[u8], i: usize) -> u32 {
    let w = &words[4 * i..4 * i + 4];
    u32::from_le_bytes([w[0], w[1], w[2], w[3]])
}

/// The first slot to probe for `key` in a table of `1 << (64 - shift)`
/// slots, and the tag its slot carries.
#[inline]
pub(super) fn home(key: &[u8], shift: u32) -> (usize, u32) {
    let h = hash(key);
    ((h >> shift) as usize, (h as u32) << RANK_BITS)
}

/// Slice equality without a `memcmp` call: keys are a few bytes long.
#[inline]
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// A fast, seedless hash for short byte strings (wyhash-style folded multiply);
/// the keys are fixed, so no protection against chosen collisions is needed.
/// The built-in images depend on it: changing it changes `MAGIC`.
#[inline]
pub(super) fn hash(bytes: &[u8]) -> u64 {
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
