//! Token counts in the tokenizer the caller's model uses.

use std::sync::Arc;

use crate::config::TokenizerSpec;
use crate::error::{Error, Result};

#[derive(Clone)]
pub enum TokenCounter {
    Tiktoken(&'static tiktoken_rs::CoreBPE),
    HuggingFace(Arc<tokenizers::Tokenizer>),
}

impl TokenCounter {
    pub fn load(spec: &TokenizerSpec) -> Result<Self> {
        match spec {
            TokenizerSpec::O200k => Ok(Self::Tiktoken(tiktoken_rs::o200k_base_singleton())),
            TokenizerSpec::Cl100k => Ok(Self::Tiktoken(tiktoken_rs::cl100k_base_singleton())),
            TokenizerSpec::File(path) => {
                let mut tokenizer = tokenizers::Tokenizer::from_file(path).map_err(|err| {
                    Error::invalid(format!("cannot load tokenizer {}: {err}", path.display()))
                })?;
                // Shipped tokenizer.json files often pad or truncate to a model's
                // window; a count must see the whole text.
                tokenizer
                    .with_truncation(None)
                    .map_err(|err| Error::invalid(format!("tokenizer: {err}")))?;
                tokenizer.with_padding(None);
                Ok(Self::HuggingFace(Arc::new(tokenizer)))
            }
        }
    }

    pub fn count(&self, text: &str) -> u32 {
        let n = match self {
            Self::Tiktoken(bpe) => bpe.encode_ordinary(text).len(),
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

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Tiktoken(_) => f.write_str("TokenCounter::Tiktoken"),
            Self::HuggingFace(_) => f.write_str("TokenCounter::HuggingFace"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn o200k_counts_are_exact() {
        let counter = TokenCounter::load(&TokenizerSpec::O200k).unwrap();
        assert_eq!(counter.count(""), 0);
        assert_eq!(counter.count("hello world"), 2);
        assert!(counter.count("the deploy failed: missing env var") >= 6);
    }
}
