//! The BERT encoder's forward pass over one padded batch: embeddings, then
//! self-attention and feed-forward layers, each followed by a residual layer norm.

use std::path::Path;

use super::ops::{gelu, layer_norm, linear_par, matmul_strided, softmax};
use super::weights::Tensors;
use crate::error::{Error, Result};

/// The fields of a Hugging Face BERT `config.json` the forward pass uses.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    pub hidden: usize,
    pub layers: usize,
    pub heads: usize,
    pub intermediate: usize,
    pub vocab: usize,
    pub max_positions: usize,
    pub type_vocab: usize,
    pub eps: f64,
}

impl Config {
    pub fn read(path: &Path) -> Result<Self> {
        let bad = |why: String| Error::invalid(format!("bad model config {}: {why}", path.display()));
        let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
        let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
        let int = |key: &str| {
            json.get(key)
                .and_then(serde_json::Value::as_u64)
                .and_then(|v| usize::try_from(v).ok())
                .filter(|&v| v > 0)
                .ok_or_else(|| bad(format!("{key} must be a positive integer")))
        };
        match json.get("hidden_act").and_then(|v| v.as_str()) {
            Some("gelu") => {}
            other => return Err(bad(format!("hidden_act {other:?} is not supported, only \"gelu\""))),
        }
        let config = Self {
            hidden: int("hidden_size")?,
            layers: int("num_hidden_layers")?,
            heads: int("num_attention_heads")?,
            intermediate: int("intermediate_size")?,
            vocab: int("vocab_size")?,
            max_positions: int("max_position_embeddings")?,
            type_vocab: int("type_vocab_size").unwrap_or(2),
            eps: json.get("layer_norm_eps").and_then(serde_json::Value::as_f64).unwrap_or(1e-12),
        };
        if !config.hidden.is_multiple_of(config.heads) {
            return Err(bad("hidden_size is not a multiple of num_attention_heads".into()));
        }
        Ok(config)
    }
}

struct Layer {
    qkv_w: Vec<f32>, // query, key and value weights stacked: [3*hidden, hidden]
    qkv_b: Vec<f32>,
    out_w: Vec<f32>,
    out_b: Vec<f32>,
    ln1_g: Vec<f32>,
    ln1_b: Vec<f32>,
    up_w: Vec<f32>,
    up_b: Vec<f32>,
    down_w: Vec<f32>,
    down_b: Vec<f32>,
    ln2_g: Vec<f32>,
    ln2_b: Vec<f32>,
}

pub struct Bert {
    pub config: Config,
    word: Vec<f32>,
    position: Vec<f32>,
    token_type0: Vec<f32>,
    ln_g: Vec<f32>,
    ln_b: Vec<f32>,
    layers: Vec<Layer>,
}

impl Bert {
    pub fn new(config: Config, mut t: Tensors) -> Result<Self> {
        let (h, i) = (config.hidden, config.intermediate);
        // Checkpoints saved from BertModel have bare names; some prefix "bert.".
        let prefix = if t.contains("embeddings.LayerNorm.weight") { "" } else { "bert." };
        let mut get = |name: &str, shape: &[usize]| t.take(&format!("{prefix}{name}"), shape);
        let mut token_type = get("embeddings.token_type_embeddings.weight", &[config.type_vocab, h])?;
        // Single sentences only ever use token type 0.
        token_type.truncate(h);
        let mut bert = Self {
            config,
            word: get("embeddings.word_embeddings.weight", &[config.vocab, h])?,
            position: get("embeddings.position_embeddings.weight", &[config.max_positions, h])?,
            token_type0: token_type,
            ln_g: get("embeddings.LayerNorm.weight", &[h])?,
            ln_b: get("embeddings.LayerNorm.bias", &[h])?,
            layers: Vec::with_capacity(config.layers),
        };
        for l in 0..config.layers {
            let p = format!("encoder.layer.{l}.");
            let mut qkv_w = get(&format!("{p}attention.self.query.weight"), &[h, h])?;
            qkv_w.extend(get(&format!("{p}attention.self.key.weight"), &[h, h])?);
            qkv_w.extend(get(&format!("{p}attention.self.value.weight"), &[h, h])?);
            let mut qkv_b = get(&format!("{p}attention.self.query.bias"), &[h])?;
            qkv_b.extend(get(&format!("{p}attention.self.key.bias"), &[h])?);
            qkv_b.extend(get(&format!("{p}attention.self.value.bias"), &[h])?);
            bert.layers.push(Layer {
                qkv_w,
                qkv_b,
                out_w: get(&format!("{p}attention.output.dense.weight"), &[h, h])?,
                out_b: get(&format!("{p}attention.output.dense.bias"), &[h])?,
                ln1_g: get(&format!("{p}attention.output.LayerNorm.weight"), &[h])?,
                ln1_b: get(&format!("{p}attention.output.LayerNorm.bias"), &[h])?,
                up_w: get(&format!("{p}intermediate.dense.weight"), &[i, h])?,
                up_b: get(&format!("{p}intermediate.dense.bias"), &[i])?,
                down_w: get(&format!("{p}output.dense.weight"), &[h, i])?,
                down_b: get(&format!("{p}output.dense.bias"), &[h])?,
                ln2_g: get(&format!("{p}output.LayerNorm.weight"), &[h])?,
                ln2_b: get(&format!("{p}output.LayerNorm.bias"), &[h])?,
            });
        }
        Ok(bert)
    }
}

impl Bert {
    /// Hidden states `[total, hidden]` for sequences packed back to back (no
    /// padding): `lens[s]` tokens of sequence `s` follow those of `s - 1` in
    /// `ids`. Attention stays inside each sequence, which is what padding plus an
    /// additive -inf key mask computes, without spending work on padding rows.
    /// The linear layers are split into up to `threads` parts on the crate's pool.
    pub fn forward(&self, ids: &[u32], lens: &[usize], threads: usize) -> Result<Vec<f32>> {
        let Config { hidden: h, intermediate: inter, heads, .. } = self.config;
        let n = ids.len();
        let mut x = self.embed(ids, lens)?;
        let mut qkv = vec![0.0; n * 3 * h];
        let mut ctx = vec![0.0; n * h];
        let mut tmp = vec![0.0; n * h];
        let mut up = vec![0.0; n * inter];
        let longest = lens.iter().copied().max().unwrap_or(0);
        let mut scores = vec![0.0; longest * longest];
        let d = h / heads;
        let scale = 1.0 / (d as f32).sqrt();
        for layer in &self.layers {
            linear_par(&x, n, &layer.qkv_w, &layer.qkv_b, &mut qkv, threads);
            let mut start = 0;
            for &len in lens {
                let scores = &mut scores[..len * len];
                for head in 0..heads {
                    let q = qkv[start * 3 * h + head * d..].as_ptr();
                    let k = qkv[start * 3 * h + h + head * d..].as_ptr();
                    let v = qkv[start * 3 * h + 2 * h + head * d..].as_ptr();
                    let out = ctx[start * h + head * d..].as_mut_ptr();
                    // SAFETY: rows start..start+len of qkv ([n, 3h]) and ctx ([n, h]),
                    // columns of this head (< h wide) stay in bounds; `scores` is its
                    // own buffer of len*len.
                    unsafe {
                        matmul_strided(
                            (len, d, len),
                            (q, 3 * h, 1),
                            (k, 1, 3 * h),
                            (scores.as_mut_ptr(), len, 1),
                            scale,
                            0.0,
                        );
                    }
                    scores.chunks_exact_mut(len).for_each(softmax);
                    // SAFETY: as above.
                    unsafe {
                        matmul_strided(
                            (len, len, d),
                            (scores.as_ptr(), len, 1),
                            (v, 3 * h, 1),
                            (out, h, 1),
                            1.0,
                            0.0,
                        );
                    }
                }
                start += len;
            }
            linear_par(&ctx, n, &layer.out_w, &layer.out_b, &mut tmp, threads);
            add_norm(&mut x, &tmp, &layer.ln1_g, &layer.ln1_b, self.config.eps);
            linear_par(&x, n, &layer.up_w, &layer.up_b, &mut up, threads);
            gelu(&mut up);
            linear_par(&up, n, &layer.down_w, &layer.down_b, &mut tmp, threads);
            add_norm(&mut x, &tmp, &layer.ln2_g, &layer.ln2_b, self.config.eps);
        }
        Ok(x)
    }

    fn embed(&self, ids: &[u32], lens: &[usize]) -> Result<Vec<f32>> {
        let h = self.config.hidden;
        let mut x = vec![0.0; ids.len() * h];
        let positions = lens.iter().flat_map(|&len| 0..len);
        for ((row, &id), pos) in x.chunks_exact_mut(h).zip(ids).zip(positions) {
            let id = id as usize;
            if id >= self.config.vocab || pos >= self.config.max_positions {
                return Err(Error::Internal(format!("token {id} at position {pos} is outside the model")));
            }
            let word = &self.word[id * h..(id + 1) * h];
            let position = &self.position[pos * h..(pos + 1) * h];
            for (j, v) in row.iter_mut().enumerate() {
                *v = word[j] + position[j] + self.token_type0[j];
            }
        }
        layer_norm(&mut x, &self.ln_g, &self.ln_b, self.config.eps);
        Ok(x)
    }
}

/// `x = layer_norm(x + delta)`, BERT's residual connection.
fn add_norm(x: &mut [f32], delta: &[f32], gamma: &[f32], beta: &[f32], eps: f64) {
    for (a, b) in x.iter_mut().zip(delta) {
        *a += b;
    }
    layer_norm(x, gamma, beta, eps);
}
