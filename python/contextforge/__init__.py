"""contextforge: durable, scoped, searchable memory for LLM applications.

async with ContextForge.open("memory.db") as cf:
    await cf.save("the deploy failed: missing env var", kind="note", scope="project:demo")
    hits = await cf.query("deploy failure", "project:demo", 2048)
"""

import logging
from typing import TYPE_CHECKING

from ._convert import Timestamp
from ._core import Context, Hit, __version__
from ._vectors import Embedder
from .audit import Change, Read
from .config import Config
from .distill.run import DistillResult, SavedItem
from .errors import (
    AuthenticationError,
    ClosedError,
    ContextForgeError,
    EmbedderMismatchError,
    EncryptionKeyError,
    IncompatibleStoreError,
    InternalError,
    InvalidInputError,
    InvalidTypeError,
    NotFound,
    RetryableStorageError,
    ScrubbingWeakenedWarning,
    SearchIndexError,
    StorageError,
)
from .forgotten import Forgotten
from .hits import Hits
from .memory import ContextForge, verify_citations
from .provenance import Link
from .saved import Saved
from .scope import ALL_SCOPES, AllScopes, Scope, ScopeFilter
from .sync import ContextForgeSync

# A library logs; the application decides where it goes (no "last resort" stderr).
logging.getLogger("contextforge").addHandler(logging.NullHandler())

if TYPE_CHECKING:
    from .distill.client import OpenAIChatDistiller
    from .embedders import LocalEmbedder


def __getattr__(name: str) -> object:
    # The built-in embedder loads numpy and the model client httpx; stores
    # without embeddings, and the offline distiller, never need them.
    if name == "LocalEmbedder":
        from .embedders import LocalEmbedder

        return LocalEmbedder
    if name == "OpenAIChatDistiller":
        from .distill.client import OpenAIChatDistiller

        return OpenAIChatDistiller
    raise AttributeError(f"module 'contextforge' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "ALL_SCOPES",
    "AllScopes",
    "AuthenticationError",
    "Change",
    "ClosedError",
    "Config",
    "Context",
    "ContextForge",
    "ContextForgeError",
    "ContextForgeSync",
    "DistillResult",
    "Embedder",
    "EmbedderMismatchError",
    "EncryptionKeyError",
    "Forgotten",
    "Hit",
    "Hits",
    "IncompatibleStoreError",
    "InternalError",
    "InvalidInputError",
    "InvalidTypeError",
    "Link",
    "LocalEmbedder",
    "NotFound",
    "OpenAIChatDistiller",
    "Read",
    "RetryableStorageError",
    "Saved",
    "SavedItem",
    "Scope",
    "ScopeFilter",
    "ScrubbingWeakenedWarning",
    "SearchIndexError",
    "StorageError",
    "Timestamp",
    "__version__",
    "verify_citations",
]
