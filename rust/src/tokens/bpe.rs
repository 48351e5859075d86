//! Counting tiktoken tokens without producing them: the same pieces and the same
//! merges as `tiktoken_rs::CoreBPE::encode_ordinary`, so the same count.

use std::cell::RefCell;
use std::sync::OnceLock;

use super::cache;
use super::split::{self, Splitter};
use super::vocab::Vocab;

/// A tiktoken vocabulary and its pre-tokenising pattern.
pub struct Bpe {
    vocab: Vocab<'static>,
    splitter: Splitter,
    /// Which built-in vocabulary this is, for the piece cache.
    which: usize,
}

/// The rank of a pair that is not a token; merging stops when every pair is.
const NONE: u32 = u32::MAX;

impl Bpe {
    fn load(image: &'static [u8], pattern: &str, which: usize) -> Self {
        // Both inputs are compiled in and checked by the tests.
        let vocab = Vocab::new(image).expect("built-in vocabulary image is valid");
        let splitter = Splitter::new(pattern).expect("built-in pattern compiles");
        Bpe { vocab, splitter, which }
    }

    /// o200k_base, loaded once per process.
    pub fn o200k() -> &'static Self {
        static BPE: OnceLock<Bpe> = OnceLock::new();
        BPE.get_or_init(|| Bpe::load(include_bytes!("data/o200k_base.bin"), split::O200K, 0))
    }

    /// cl100k_base, loaded once per process.
    pub fn cl100k() -> &'static Self {
        static BPE: OnceLock<Bpe> = OnceLock::new();
        BPE.get_or_init(|| Bpe::load(include_bytes!("data/cl100k_base.bin"), split::CL100K, 1))
    }

    /// The bytes of tokens `ids`, or the first id that is not an ordinary token
    /// (special tokens are never counted, so they are not kept).
    pub fn decode_bytes(&self, ids: &[u32]) -> Result<Vec<u8>, u32> {
        let mut out = Vec::new();
        for &id in ids {
            if id as usize >= self.vocab.len() {
                return Err(id);
            }
            out.extend_from_slice(self.vocab.token(id));
        }
        Ok(out)
    }

    /// `encode_ordinary(text).len()`.
    pub(super) fn count(&self, text: &str) -> usize {
        thread_local! {
            static PARTS: RefCell<Vec<(u32, u32)>> = const { RefCell::new(Vec::new()) };
        }
        PARTS.with(|parts| {
            let mut parts = parts.borrow_mut();
            let mut n = 0;
            self.splitter.pieces(text, |piece| {
                let piece = piece.as_bytes();
                n += if piece.len() <= 1 {
                    1
                } else {
                    cache::count(self.which, piece, || self.count_piece(piece, &mut parts))
                };
            });
            n
        })
    }

    /// tiktoken's `byte_pair_encode(piece).len()`, after its whole-piece lookup.
    fn count_piece(&self, piece: &[u8], parts: &mut Vec<(u32, u32)>) -> usize {
        if piece.len() <= 1 || self.vocab.rank(piece).is_some() {
            return 1;
        }
        self.merge(piece, parts);
        parts.len() - 1
    }

    /// tiktoken's `_byte_pair_merge`, step for step (ties go to the leftmost
    /// pair): `parts` ends as (start, rank of the pair starting there) per part,
    /// plus a sentinel at `piece.len()`. Pieces come from `pieces()` chunks, far
    /// below 4 GB, so positions fit in u32.
    fn merge(&self, piece: &[u8], parts: &mut Vec<(u32, u32)>) {
        let rank = |range: std::ops::Range<u32>| {
            self.vocab.rank(&piece[range.start as usize..range.end as usize]).unwrap_or(NONE)
        };
        let len = u32::try_from(piece.len()).unwrap_or(u32::MAX);
        parts.clear();
        parts.extend((0..len - 1).map(|i| (i, rank(i..i + 2))));
        parts.push((len - 1, NONE));
        parts.push((len, NONE));
        // The pair at `i` after parts[i + 1] is removed spans to parts[i + 3].
        let merged =
            |parts: &[(u32, u32)], i: usize| parts.get(i + 3).map_or(NONE, |&(end, _)| rank(parts[i].0..end));
        loop {
            let (min, i) = parts[..parts.len() - 1]
                .iter()
                .enumerate()
                .fold((NONE, 0), |best, (i, &(_, r))| if r < best.0 { (r, i) } else { best });
            if min == NONE {
                break;
            }
            if i > 0 {
                parts[i - 1].1 = merged(parts, i - 1);
            }
            parts[i].1 = merged(parts, i);
            parts.remove(i + 1);
        }
    }
}
