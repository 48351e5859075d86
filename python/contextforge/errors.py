"""The exception tree. Every error the library raises is a ``ContextForgeError``,
and each also subclasses the built-in a caller would naturally catch."""

from __future__ import annotations

__all__ = [
    "ClosedError",
    "ContextForgeError",
    "EmbedderMismatchError",
    "IncompatibleStoreError",
    "InternalError",
    "InvalidInputError",
    "InvalidTypeError",
    "NotFound",
    "RetryableStorageError",
    "ScrubbingWeakenedWarning",
    "SearchIndexError",
    "StorageError",
]


class ContextForgeError(Exception):
    """Base class of every contextforge error."""


class InvalidInputError(ContextForgeError, ValueError):
    """An argument was rejected; nothing was changed."""


class InvalidTypeError(InvalidInputError, TypeError):
    """An argument had the wrong type; nothing was changed."""


class NotFound(ContextForgeError, KeyError):
    """No entry has the given id."""

    def __str__(self) -> str:
        # KeyError would print the repr of its argument.
        return str(self.args[0]) if self.args else "not found"


class ClosedError(ContextForgeError, RuntimeError):
    """The instance was closed; open a new one."""


class StorageError(ContextForgeError, OSError):
    """The database failed."""


class RetryableStorageError(StorageError):
    """The database was busy or unreachable; the same call may succeed later."""


class AuthenticationError(StorageError):
    """A libSQL server refused the credentials: a wrong, missing or expired
    ``auth_token``. Not retryable: the same token fails again."""


class EncryptionKeyError(StorageError):
    """The store and the ``encryption_key`` do not match: a wrong key, no key for
    an encrypted store, or a key for a plain one. Nothing was read or changed."""


class SearchIndexError(ContextForgeError, RuntimeError):
    """The derived search index failed; the database still holds every entry."""


class IncompatibleStoreError(ContextForgeError, RuntimeError):
    """The store was written by a newer, incompatible version."""


class EmbedderMismatchError(ContextForgeError, ValueError):
    """The store's vectors come from another embedder or dimension than the one
    configured. Open with ``reembed=True`` (or call ``reembed()``) to switch."""


class InternalError(ContextForgeError, RuntimeError):
    """A bug in contextforge; please report it with the message."""


class ScrubbingWeakenedWarning(UserWarning):
    """A store that scrubbed secrets (or PII, or metadata) until now was opened
    with a ``Config`` that does not: entries saved from now on keep them."""
