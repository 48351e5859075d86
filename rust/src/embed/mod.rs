//! A built-in offline sentence embedder: a BERT encoder (all-MiniLM-L6-v2 and
//! its kin) read from a sentence-transformers model directory, run on the CPU
//! with no network, mean-pooled and L2-normalised.
//!
//! tokenize -> bert (weights, ops) -> pool. Texts are tokenised, sorted longest
//! first and cut into batches that the machine's threads take in turn.

mod bert;
mod ops;
mod tokenize;
mod weights;

use std::path::Path;

use crate::error::{Error, Result};

/// Sequences per batch: enough rows for sgemm to run near its peak, small enough
/// that a long batch's buffers stay a few tens of MB.
const MAX_BATCH: usize = 32;

/// Pooled rows with their index in the caller's list.
type Rows = Vec<(usize, Vec<f32>)>;

pub struct Embedder {
    bert: bert::Bert,
    tokenizer: tokenize::Tokenizer,
}

impl Embedder {
    /// Reads `config.json`, `model.safetensors`, `tokenizer.json` and, when
    /// present, `sentence_bert_config.json` and `1_Pooling/config.json`.
    pub fn load(dir: &Path) -> Result<Self> {
        if !dir.is_dir() {
            return Err(Error::invalid(format!("model directory {} does not exist", dir.display())));
        }
        for file in ["config.json", "model.safetensors", "tokenizer.json"] {
            if !dir.join(file).is_file() {
                return Err(Error::invalid(format!("model directory {} has no {file}", dir.display())));
            }
        }
        check_pooling(dir)?;
        let config = bert::Config::read(&dir.join("config.json"))?;
        let max_len =
            tokenize::max_seq_length(dir)?.unwrap_or(config.max_positions).min(config.max_positions);
        let tokenizer = tokenize::Tokenizer::load(&dir.join("tokenizer.json"), max_len)?;
        let tensors = weights::Tensors::read(&dir.join("model.safetensors"))?;
        let bert = bert::Bert::new(config, tensors)?;
        Ok(Self { bert, tokenizer })
    }

    pub fn dim(&self) -> usize {
        self.bert.config.hidden
    }

    /// Row-major n x dim, each row mean-pooled over real tokens and L2-normalised.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<f32>> {
        let ids = texts.iter().map(|text| self.tokenizer.encode(text)).collect::<Result<Vec<_>>>()?;
        let mut order: Vec<usize> = (0..ids.len()).collect();
        // Longest first: batches hold similar lengths, and the slow ones start early.
        order.sort_by_key(|&i| std::cmp::Reverse(ids[i].len()));
        let threads = crate::runtime::cores();
        let per_batch = ids.len().div_ceil(threads).clamp(1, MAX_BATCH);
        let batches: Vec<&[usize]> = order.chunks(per_batch).collect();
        // Fewer batches than threads (a single short text): split the layers instead.
        let inner = (threads / batches.len().max(1)).max(1);

        let dim = self.dim();
        let mut out = vec![0.0; texts.len() * dim];
        let one = |batch: &[usize]| -> Result<Rows> {
            let pooled = self.embed_batch(batch.iter().map(|&i| ids[i].as_slice()), inner)?;
            Ok(batch.iter().copied().zip(pooled.chunks_exact(dim).map(<[f32]>::to_vec)).collect())
        };
        let results: Vec<Result<Rows>> = if threads.min(batches.len()) <= 1 {
            batches.iter().map(|batch| one(batch)).collect()
        } else {
            // A job per batch: a pool thread waiting inside another call's job
            // may take one of these, and then gives it back after one batch.
            let mut results: Vec<Result<Rows>> = batches.iter().map(|_| Ok(Vec::new())).collect();
            let one = &one;
            crate::runtime::pool().scope(|scope| {
                for (batch, out) in batches.iter().zip(&mut results) {
                    scope.spawn(move |_| {
                        *out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| one(batch)))
                            .unwrap_or_else(|_| Err(Error::Internal("an embedding thread panicked".into())));
                    });
                }
            });
            results
        };
        for result in results {
            for (i, row) in result? {
                out[i * dim..(i + 1) * dim].copy_from_slice(&row);
            }
        }
        Ok(out)
    }

    /// Pooled, normalised rows for one batch of token id sequences.
    fn embed_batch<'a>(
        &self,
        seqs: impl Iterator<Item = &'a [u32]> + Clone,
        threads: usize,
    ) -> Result<Vec<f32>> {
        let lens: Vec<usize> = seqs.clone().map(<[u32]>::len).collect();
        let ids: Vec<u32> = seqs.flatten().copied().collect();
        let hidden = self.bert.forward(&ids, &lens, threads)?;
        let dim = self.dim();
        let mut pooled = vec![0.0; lens.len() * dim];
        let mut rows = hidden.chunks_exact(dim);
        for (len, out) in lens.iter().zip(pooled.chunks_exact_mut(dim)) {
            for row in rows.by_ref().take(*len) {
                for (o, v) in out.iter_mut().zip(row) {
                    *o += v;
                }
            }
            let inv_len = 1.0 / *len as f32;
            out.iter_mut().for_each(|o| *o *= inv_len);
            // As torch's F.normalize: a zero vector stays zero.
            let norm = out.iter().map(|o| o * o).sum::<f32>().sqrt().max(1e-12);
            out.iter_mut().for_each(|o| *o /= norm);
        }
        Ok(pooled)
    }
}

/// Only mean pooling is implemented; refuse a model configured otherwise rather
/// than return vectors it was not trained for.
fn check_pooling(dir: &Path) -> Result<()> {
    let path = dir.join("1_Pooling").join("config.json");
    if !path.exists() {
        return Ok(());
    }
    let bad = |why: &str| Error::invalid(format!("{}: {why}", path.display()));
    let text = std::fs::read_to_string(&path).map_err(|err| bad(&err.to_string()))?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|err| bad(&err.to_string()))?;
    if json.get("pooling_mode_mean_tokens").and_then(serde_json::Value::as_bool) == Some(true) {
        Ok(())
    } else {
        Err(bad("only mean pooling (pooling_mode_mean_tokens) is supported"))
    }
}
