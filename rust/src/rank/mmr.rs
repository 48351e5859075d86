//! Maximal marginal relevance: re-ranks the best candidates so that each next
//! one is relevant and unlike those already chosen, and leaves out near
//! duplicates of a better candidate.

use super::Ranked;

/// Re-ranks the first `window` of `ranked` (best first). `similarity(i, j)`
/// compares candidates by index, in `[0, 1]`. Each step takes the candidate with
/// the best `lambda * relevance - (1 - lambda) * max similarity to those taken`
/// (relevance scaled to the best score); a candidate at least
/// `duplicate_similarity` like one taken is dropped. Candidates past the window
/// follow in their order. Returns each kept candidate with its diversity
/// penalty, `(1 - lambda) * max similarity`.
pub fn mmr(
    ranked: &[Ranked],
    similarity: impl Fn(usize, usize) -> f32,
    lambda: f32,
    duplicate_similarity: f32,
    window: usize,
) -> Vec<(Ranked, f32)> {
    let window = window.min(ranked.len());
    let best = ranked.first().map_or(1.0, |r| r.score).max(f32::MIN_POSITIVE);
    let mut left: Vec<usize> = (0..window).collect();
    // For each candidate left, its highest similarity to one taken so far.
    let mut closest = vec![0.0f32; window];
    let mut out = Vec::with_capacity(ranked.len());
    while !left.is_empty() {
        let value = |i: usize| lambda * ranked[i].score / best - (1.0 - lambda) * closest[i];
        let (at, &pick) = left
            .iter()
            .enumerate()
            .max_by(|(_, &a), (_, &b)| value(a).total_cmp(&value(b)).then(b.cmp(&a)))
            .expect("left is not empty");
        left.swap_remove(at);
        out.push((ranked[pick], (1.0 - lambda) * closest[pick]));
        left.retain(|&i| {
            closest[i] = closest[i].max(similarity(pick, i));
            closest[i] < duplicate_similarity
        });
    }
    out.extend(ranked[window..].iter().map(|r| (*r, 0.0)));
    out
}

/// Refuses items too similar to one already accepted: cosine of unit vectors
/// where both have one, the Jaccard similarity of their word sets otherwise.
pub struct Duplicates {
    threshold: f32,
    kept: Vec<(Option<Vec<f32>>, Vec<u64>, u64)>,
}

impl Duplicates {
    /// `threshold` above 1 accepts everything.
    pub fn new(threshold: f32) -> Self {
        Self { threshold, kept: Vec::new() }
    }

    pub fn active(&self) -> bool {
        self.threshold <= 1.0
    }

    /// Whether an item with this (unit) vector and text is new enough;
    /// remembers it if so.
    pub fn admit(&mut self, vector: impl FnOnce() -> Option<Vec<f32>>, text: &str) -> bool {
        if !self.active() {
            return true;
        }
        let vector = vector();
        let words = word_set(text);
        let mask = signature(&words);
        let duplicate = self.kept.iter().any(|(v, w, m)| match (v, &vector) {
            (Some(a), Some(b)) => crate::index::dense::dot(a, b) >= self.threshold,
            // Each bit that differs between the signatures stands for at least
            // one word in only one set: too many, and the sets cannot be close.
            _ => {
                let differ = (m ^ mask).count_ones() as f32;
                differ <= (1.0 - self.threshold) * (w.len() + words.len()) as f32
                    && jaccard(w, &words) >= self.threshold
            }
        });
        if !duplicate {
            self.kept.push((vector, words, mask));
        }
        !duplicate
    }
}

/// The distinct words of `text` (alphanumeric runs, lowercased), as sorted
/// 64-bit hashes: cheap to build and to compare, with no allocation per word.
pub fn word_set(text: &str) -> Vec<u64> {
    let mut words = if text.is_ascii() { ascii_words(text) } else { words(text) };
    words.sort_unstable();
    words.dedup();
    words
}

fn add(hash: &mut u64, byte: u8) {
    *hash = (*hash ^ u64::from(byte)).wrapping_mul(FNV_PRIME);
}

/// `words` for ASCII text, byte by byte: the same hashes, without decoding.
fn ascii_words(text: &str) -> Vec<u64> {
    let mut words = Vec::with_capacity(text.len() / 6 + 1);
    let (mut hash, mut in_word) = (FNV_OFFSET, false);
    for &b in text.as_bytes() {
        if b.is_ascii_alphanumeric() {
            add(&mut hash, b.to_ascii_lowercase());
            in_word = true;
        } else if in_word {
            words.push(hash);
            (hash, in_word) = (FNV_OFFSET, false);
        }
    }
    if in_word {
        words.push(hash);
    }
    words
}

/// The hash of each word of `text`, in order, repeats included.
fn words(text: &str) -> Vec<u64> {
    let mut words: Vec<u64> = Vec::new();
    let mut hash: u64 = FNV_OFFSET;
    let mut in_word = false;
    for c in text.chars() {
        let alnum = if c.is_ascii() {
            let b = c as u8;
            let word = b.is_ascii_alphanumeric();
            if word {
                add(&mut hash, b.to_ascii_lowercase());
            }
            word
        } else if c.is_alphanumeric() {
            for lower in c.to_lowercase() {
                let mut buf = [0u8; 4];
                for b in lower.encode_utf8(&mut buf).bytes() {
                    add(&mut hash, b);
                }
            }
            true
        } else {
            false
        };
        if alnum {
            in_word = true;
        } else if in_word {
            words.push(hash);
            hash = FNV_OFFSET;
            in_word = false;
        }
    }
    if in_word {
        words.push(hash);
    }
    words
}

/// A 64-bit signature of a word set: bit `h % 64` for each hash `h`.
fn signature(words: &[u64]) -> u64 {
    words.iter().fold(0, |mask, h| mask | (1 << (h % 64)))
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0100_0000_01b3;

/// The Jaccard similarity of two sorted sets.
pub fn jaccard(a: &[u64], b: &[u64]) -> f32 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let (mut i, mut j, mut shared) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                shared += 1;
                i += 1;
                j += 1;
            }
        }
    }
    shared as f32 / (a.len() + b.len() - shared) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranked(scores: &[f32]) -> Vec<Ranked> {
        (0_i64..)
            .zip(scores)
            .map(|(id, &score)| Ranked {
                id,
                score,
                tokens: 1,
                recency: 1.0,
                bm25: score,
                ..Ranked::default()
            })
            .collect()
    }

    #[test]
    fn lambda_one_keeps_order_and_drops_only_duplicates() {
        let r = ranked(&[3.0, 2.9, 1.0]);
        let same = |i: usize, j: usize| if i.min(j) == 0 && i.max(j) == 1 { 0.95 } else { 0.0 };
        let out = mmr(&r, same, 1.0, 0.9, 10);
        assert_eq!(out.iter().map(|(r, _)| r.id).collect::<Vec<_>>(), vec![0, 2]);
        let keep_all = mmr(&r, same, 1.0, 1.01, 10);
        assert_eq!(keep_all.len(), 3);
    }

    #[test]
    fn a_lower_lambda_prefers_novelty() {
        let r = ranked(&[3.0, 2.9, 2.5]);
        let sim = |i: usize, j: usize| if i.min(j) == 0 && i.max(j) == 1 { 0.8 } else { 0.1 };
        let out = mmr(&r, sim, 0.5, 0.9, 10);
        assert_eq!(out.iter().map(|(r, _)| r.id).collect::<Vec<_>>(), vec![0, 2, 1]);
        assert!((out[2].1 - 0.4).abs() < 1e-6, "penalty (1 - lambda) * 0.8");
    }

    #[test]
    fn candidates_past_the_window_follow_unchanged() {
        let r = ranked(&[3.0, 2.0, 1.0, 0.5]);
        let out = mmr(&r, |_, _| 0.0, 0.7, 0.9, 2);
        assert_eq!(out.iter().map(|(r, _)| r.id).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
    }

    #[test]
    fn duplicates_compare_vectors_where_both_have_one_and_words_otherwise() {
        let mut d = Duplicates::new(0.9);
        assert!(d.admit(|| Some(vec![1.0, 0.0]), "alpha"));
        assert!(!d.admit(|| Some(vec![0.99, 0.141]), "beta"), "cosine 0.99");
        assert!(d.admit(|| Some(vec![0.0, 1.0]), "alpha"), "same words, orthogonal vectors");
        assert!(!d.admit(|| None, "Alpha!"), "no vector: the words match");
        let mut off = Duplicates::new(1.5);
        assert!(off.admit(|| None, "x") && off.admit(|| None, "x"));
    }

    #[test]
    fn jaccard_of_word_sets() {
        assert_eq!(jaccard(&word_set("a b"), &word_set("b, c")), 1.0 / 3.0);
        assert_eq!(jaccard(&word_set("The deploy FAILED"), &word_set("the deploy failed!")), 1.0);
        assert_eq!(word_set("x x  x").len(), 1);
        assert_eq!(jaccard(&word_set("résumé"), &word_set("RÉSUMÉ")), 1.0);
    }

    proptest::proptest! {
        #[test]
        fn ascii_words_hash_as_the_general_loop_does(text in "[ -~\n\t]{0,80}") {
            proptest::prop_assert_eq!(ascii_words(&text), words(&text));
        }
    }
}
