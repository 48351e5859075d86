//! Word pieces for the encoder: the model's `tokenizer.json` with its fixed
//! padding removed and truncation at sentence-transformers' `max_seq_length`.

use std::path::Path;

use tokenizers::{TruncationParams, TruncationStrategy};

use crate::error::{Error, Result};

pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
}

impl Tokenizer {
    /// `max_len` counts the special tokens, as in sentence-transformers.
    pub fn load(path: &Path, max_len: usize) -> Result<Self> {
        let shown = path.display();
        let mut inner = tokenizers::Tokenizer::from_file(path)
            .map_err(|err| Error::invalid(format!("cannot load tokenizer {shown}: {err}")))?;
        inner.with_padding(None);
        inner
            .with_truncation(Some(TruncationParams {
                max_length: max_len,
                strategy: TruncationStrategy::LongestFirst,
                ..TruncationParams::default()
            }))
            .map_err(|err| Error::invalid(format!("tokenizer {shown}: {err}")))?;
        Ok(Self { inner })
    }

    /// Token ids with `[CLS]` and `[SEP]`.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        self.inner
            .encode_fast(text, true)
            .map(|encoding| encoding.get_ids().to_vec())
            .map_err(|err| Error::invalid(format!("cannot tokenize text: {err}")))
    }
}

/// sentence-transformers' `max_seq_length` from `sentence_bert_config.json`, if
/// the file is there.
pub fn max_seq_length(dir: &Path) -> Result<Option<usize>> {
    let path = dir.join("sentence_bert_config.json");
    if !path.exists() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&path)
        .map_err(|err| Error::invalid(format!("cannot read {}: {err}", path.display())))?;
    let json: serde_json::Value = serde_json::from_str(&text)
        .map_err(|err| Error::invalid(format!("bad {}: {err}", path.display())))?;
    Ok(json.get("max_seq_length").and_then(serde_json::Value::as_u64).and_then(|v| usize::try_from(v).ok()))
}
