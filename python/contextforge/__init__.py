"""contextforge: durable, scoped, searchable memory for LLM applications.

    cf = await ContextForge.open("memory.db")
    await cf.save("the deploy failed: missing env var", kind="note", scope="project:demo")
    hits = await cf.query("deploy failure", "project:demo", 2048)
"""

from ._core import Context, Hit, __version__
from ._vectors import Embedder
from .config import Config
from .embedders import LocalEmbedder
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
