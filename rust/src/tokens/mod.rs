//! Token counts in the tokenizer the caller's model uses.
//!
//! The built-in vocabularies count with our own BPE ([`Bpe`]): exactly
//! tiktoken's counts for text up to 8 KB (see [`pieces`] for longer text), in
//! under a quarter of the memory of `tiktoken_rs::CoreBPE`.

mod bpe;
mod cache;
#[cfg(test)]
mod generate;
mod split;
#[cfg(test)]
mod tests;
mod vocab;

use std::sync::{Arc, Once};

use crate::config::TokenizerSpec;
use crate::error::{Error, Result};

pub use bpe::Bpe;

type Vocabulary = fn() -> &'static Bpe;

#[derive(Clone)]
pub enum TokenCounter {
    /// A built-in vocabulary, loaded once per process on first use.
    Tiktoken(Vocabulary),
    HuggingFace(Arc<tokenizers::Tokenizer>),
}

impl TokenCounter {
    /// A built-in vocabulary starts loading on a background thread, once per
    /// process (its image is read in place, but compiling its pre-tokenising
    /// regex takes a few ms), so opening a store does not wait for it; the first
    /// count does, if it comes sooner. A tokenizer file is read at once, so a bad
    /// one fails here.
    pub fn load(spec: &TokenizerSpec) -> Result<Self> {
        static O200K: Once = Once::new();
        static CL100K: Once = Once::new();
        let builtin = |vocabulary: Vocabulary, warming: &'static Once| {
            warming.call_once(|| {
                // Without a thread to spare, the first count loads it instead.
                let _ = std::thread::Builder::new().name("contextforge-vocab".into()).spawn(move || {
                    vocabulary();
                });
            });
            Ok(Self::Tiktoken(vocabulary))
        };
        match spec {
            TokenizerSpec::O200k => builtin(Bpe::o200k, &O200K),
            TokenizerSpec::Cl100k => builtin(Bpe::cl100k, &CL100K),
            TokenizerSpec::File(path) => {
                let mut tokenizer = tokenizers::Tokenizer::from_file(path).map_err(|err| {
                    Error::invalid(format!("cannot load tokenizer {}: {err}", path.display()))
                })?;
                // Shipped tokenizer.json files often pad or truncate to a model's
                // window; a count must see the whole text.
                tokenizer.with_truncation(None).map_err(|err| Error::invalid(format!("tokenizer: {err}")))?;
                tokenizer.with_padding(None);
                Ok(Self::HuggingFace(Arc::new(tokenizer)))
            }
        }
    }

    pub fn count(&self, text: &str) -> u32 {
        let n = match self {
            Self::Tiktoken(vocabulary) => {
                let bpe = vocabulary();
                pieces(text).map(|piece| bpe.count(piece)).sum()
            }
            Self::HuggingFace(tokenizer) => tokenizer
                .encode_fast(text, false)
                .map(|encoding| encoding.len())
                // A tokenizer that cannot encode some text still must not lose the
                // entry: fall back to an upper bound of one token per byte.
                .unwrap_or(text.len()),
        };
        u32::try_from(n).unwrap_or(u32::MAX)
    }
}

/// BPE merging is quadratic in the length of one unbroken run of characters, so
/// a hostile 10 MB "word" would stall a save for minutes. Text is counted in
/// pieces that end just before a whitespace character (which then starts the next
/// piece, as it starts a word's token), and a run longer than `MAX_RUN` bytes is
/// cut. Text longer than a piece can count a token or so differently per cut
/// from one encoding of the whole: where a cut splits a run of spaces, or falls
/// inside a run longer than `MAX_RUN`.
const MAX_RUN: usize = 512;

fn pieces(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        // Pieces of about 8 KB, cut before whitespace, or inside a long run.
        let mut end = rest.len().min(8192);
        if end < rest.len() {
            let window = &rest.as_bytes()[..end];
            end = match window.iter().rposition(u8::is_ascii_whitespace) {
                Some(ws) if ws > 0 && end - ws <= MAX_RUN => ws,
                _ => end.min(rest.len()).min(MAX_RUN.max(1)).max(1),
            };
            while !rest.is_char_boundary(end) {
                end += 1;
            }
        }
        let (piece, tail) = rest.split_at(end);
        rest = tail;
        Some(piece)
    })
}

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Tiktoken(_) => f.write_str("TokenCounter::Tiktoken"),
            Self::HuggingFace(_) => f.write_str("TokenCounter::HuggingFace"),
        }
    }
}
