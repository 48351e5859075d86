"""An independent numpy forward pass of a sentence-transformers BERT model
(all-MiniLM-L6-v2): the reference tests/test_embedder.py checks the Rust
embedder against, and the baseline benchmarks/embed.py compares it with.

It follows Hugging Face's BertModel literally: padded batches with an additive
mask on the keys, then mean pooling over real tokens and L2 normalisation. The
weights are read from model.safetensors with numpy; tokenisation uses the
``tokenizers`` package (a test extra).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.floating[Any]]


def read_safetensors(path: Path) -> dict[str, npt.NDArray[Any]]:
    """Every tensor in the file, by name (F32 and I64 only, which BERT uses)."""
    data = path.read_bytes()
    (header_len,) = struct.unpack("<Q", data[:8])
    header: dict[str, Any] = json.loads(data[8 : 8 + header_len])
    body = memoryview(data)[8 + header_len :]
    dtypes: dict[str, np.dtype[Any]] = {"F32": np.dtype("<f4"), "I64": np.dtype("<i8")}
    tensors: dict[str, npt.NDArray[Any]] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        raw = np.frombuffer(body[start:end], dtype=dtypes[info["dtype"]])
        tensors[name] = raw.reshape(info["shape"])
    return tensors


def erf(x: Array) -> Array:
    """Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7); numpy has no erf."""
    sign = np.sign(x)
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * z)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    result: Array = sign * (1.0 - poly * np.exp(-z * z))
    return result


def layer_norm(x: Array, gamma: Array, beta: Array, eps: float) -> Array:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    result: Array = (x - mean) / np.sqrt(var + eps) * gamma + beta
    return result


class MiniLM:
    """``embed(texts)`` gives the same vectors as sentence-transformers would."""

    def __init__(self, model_dir: Path, dtype: type[np.floating[Any]] = np.float32) -> None:
        from tokenizers import Tokenizer

        config = json.loads((model_dir / "config.json").read_text())
        st_config = json.loads((model_dir / "sentence_bert_config.json").read_text())
        self.heads: int = config["num_attention_heads"]
        self.layers: int = config["num_hidden_layers"]
        self.eps: float = config["layer_norm_eps"]
        self.dtype = dtype
        tensors = read_safetensors(model_dir / "model.safetensors")
        self.w = {k: v.astype(dtype) for k, v in tensors.items() if v.dtype == np.float32}
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=st_config["max_seq_length"])

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        return [list(self.tokenizer.encode(text).ids) for text in texts]

    def embed(self, texts: Sequence[str], batch_size: int = 32) -> npt.NDArray[np.float32]:
        ids = self.token_ids(texts)
        if not ids:
            return np.empty((0, self.w["embeddings.LayerNorm.weight"].shape[0]), np.float32)
        # Like sentence-transformers' encode: batches of similar lengths pad little.
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
        ordered = [ids[i] for i in order]
        out = np.concatenate(
            [self._batch(ordered[i : i + batch_size]) for i in range(0, len(ids), batch_size)]
        )
        result = np.empty_like(out, dtype=np.float32)
        result[order] = out
        return result

    def _linear(self, x: Array, name: str) -> Array:
        # One 2-D product (a single BLAS call) rather than one per batch row.
        flat = x.reshape(-1, x.shape[-1]) @ self.w[f"{name}.weight"].T + self.w[f"{name}.bias"]
        result: Array = flat.reshape(*x.shape[:-1], flat.shape[-1])
        return result

    def _norm(self, x: Array, name: str) -> Array:
        return layer_norm(x, self.w[f"{name}.weight"], self.w[f"{name}.bias"], self.eps)

    def _batch(self, ids: list[list[int]]) -> Array:
        w = self.w
        b, t = len(ids), max(len(seq) for seq in ids)
        tokens = np.zeros((b, t), dtype=np.int64)
        mask = np.zeros((b, t), dtype=self.dtype)
        for i, seq in enumerate(ids):
            tokens[i, : len(seq)] = seq
            mask[i, : len(seq)] = 1.0
        x = (
            w["embeddings.word_embeddings.weight"][tokens]
            + w["embeddings.position_embeddings.weight"][:t]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = self._norm(x, "embeddings.LayerNorm")
        # Hugging Face's extended attention mask: the dtype's minimum on padding keys.
        bias = ((1.0 - mask) * np.finfo(self.dtype).min)[:, None, None, :]
        h = x.shape[-1]
        d = h // self.heads

        def split(y: Array) -> Array:
            return y.reshape(b, t, self.heads, d).transpose(0, 2, 1, 3)

        for layer in range(self.layers):
            p = f"encoder.layer.{layer}"
            q = split(self._linear(x, f"{p}.attention.self.query"))
            k = split(self._linear(x, f"{p}.attention.self.key"))
            v = split(self._linear(x, f"{p}.attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d).astype(self.dtype) + bias
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            probs = scores / scores.sum(axis=-1, keepdims=True)
            context = (probs @ v).transpose(0, 2, 1, 3).reshape(b, t, h)
            attention = self._linear(context, f"{p}.attention.output.dense")
            x = self._norm(x + attention, f"{p}.attention.output.LayerNorm")
            inner = self._linear(x, f"{p}.intermediate.dense")
            inner = 0.5 * inner * (1.0 + erf(inner / np.sqrt(2.0).astype(self.dtype)))
            x = self._norm(x + self._linear(inner, f"{p}.output.dense"), f"{p}.output.LayerNorm")

        pooled = (x * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        result: Array = pooled / norms
        return result
