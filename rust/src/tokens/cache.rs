//! Counts of recently seen pieces, shared by every thread, per vocabulary.
//!
//! Text is Zipfian: most pieces have been counted before, and one probe here
//! is far cheaper than the merge loop (about sixteen vocabulary probes for a
//! seven-letter word). A count depends only on the piece, so a cached one is
//! exact. Shared rather than per thread, because a bulk save counts on
//! short-lived threads. Bounded: a shard is cleared when it fills.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::LazyLock;

use parking_lot::Mutex;

use super::vocab;

/// Pieces kept per shard; shards spread the lock between threads.
const SHARD_CAPACITY: usize = 4096;
const SHARDS: usize = 16;
/// Longer pieces are counted every time (they are rare, and costly to keep).
const MAX_PIECE: usize = 32;

type Counts = HashMap<Box<[u8]>, u32, BuildHasherDefault<PieceHasher>>;

/// One set of shards per built-in vocabulary.
static COUNTS: LazyLock<[[Mutex<Counts>; SHARDS]; 2]> =
    LazyLock::new(|| std::array::from_fn(|_| std::array::from_fn(|_| Mutex::default())));

/// The count of `piece` in vocabulary `which`, from `count` on a miss.
pub(super) fn count(which: usize, piece: &[u8], count: impl FnOnce() -> usize) -> usize {
    if piece.len() > MAX_PIECE {
        return count();
    }
    // Bits the maps' own use of the hash leaves alone (the low ones pick a
    // bucket, the top seven tag it).
    let shard = &COUNTS[which][(vocab::hash(piece) >> 32) as usize % SHARDS];
    if let Some(&n) = shard.lock().get(piece) {
        return n as usize;
    }
    let n = count();
    let mut map = shard.lock();
    if map.len() >= SHARD_CAPACITY {
        map.clear();
    }
    map.insert(piece.into(), u32::try_from(n).unwrap_or(u32::MAX));
    n
}

/// The vocabulary's own hash of short byte strings.
#[derive(Default)]
struct PieceHasher(u64);

impl Hasher for PieceHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0 = self.0.rotate_left(5) ^ vocab::hash(bytes);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}
