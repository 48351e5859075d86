"""contextforge: durable, scoped, searchable memory for LLM applications.

    cf = await ContextForge.open("memory.db")
    await cf.save("the deploy failed: missing env var", kind="note", scope="project:demo")
    hits = await cf.query("deploy failure", "project:demo", 2048)
"""

from typing import TYPE_CHECKING

from ._core import Context, Hit, __version__
from ._vectors import Embedder
from .config import Config
from .errors import (
    ClosedError,
    ContextForgeError,
    EmbedderMismatchError,
    IncompatibleStoreError,
    InternalError,
    InvalidInputError,
    InvalidTypeError,
    NotFound,
    RetryableStorageError,
    SearchIndexError,
    StorageError,
)
from .hits import Hits
from .memory import ContextForge, verify_citations
from .sync import ContextForgeSync

if TYPE_CHECKING:
    from .embedders import LocalEmbedder


def __getattr__(name: str) -> object:
    # The built-in embedder loads numpy; stores without embeddings never need it.
    if name == "LocalEmbedder":
        from .embedders import LocalEmbedder

        return LocalEmbedder
    raise AttributeError(f"module 'contextforge' has no attribute {name!r}")

__all__ = [
    "ClosedError",
    "Config",
    "Context",
    "ContextForge",
    "ContextForgeSync",
    "ContextForgeError",
    "EmbedderMismatchError",
    "Embedder",
    "Hit",
    "Hits",
    "IncompatibleStoreError",
    "InternalError",
    "InvalidInputError",
    "InvalidTypeError",
    "LocalEmbedder",
    "NotFound",
    "RetryableStorageError",
    "SearchIndexError",
    "StorageError",
    "__version__",
    "verify_citations",
]
