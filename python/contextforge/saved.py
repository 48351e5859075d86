"""``Saved``: what ``save`` and ``save_many`` return for each entry."""

from __future__ import annotations

from typing import Any

__all__ = ["Saved"]


class Saved(int):
    """The id of a saved entry (an ``int``, usable wherever an id is), which
    also tells whether this save created the entry.

    ``created`` is ``False`` when the save duplicated an entry already stored
    (same normalised content, scope, session, kind, metadata, expiry and end; see
    ``ContextForge.save``'s ``dedupe``) and that entry's id came back instead.
    """

    # No instance dict: a million ids from one save_many are a million ints.
    # ``created`` is the class's (a duplicate's class is ``_Existing``).
    __slots__ = ()
    created: bool = True

    def __new__(cls, id: int, created: bool) -> Saved:
        created = bool(created)
        kind = _Existing if cls is Saved and not created else cls
        self = int.__new__(kind, id)
        if kind.created is not created:  # a subclass of the caller's, with a dict
            object.__setattr__(self, "created", created)
        return self

    @property
    def id(self) -> int:
        """The entry's id as a plain ``int``."""
        return int(self)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Saved is immutable")

    def __repr__(self) -> str:
        return f"Saved(id={int(self)}, created={self.created})"

    def __str__(self) -> str:
        """The id, as ``str(int)`` gives it: ``f"[mem:{saved}]"`` cites the entry."""
        return int.__repr__(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Saved, (int(self), self.created))


class _Existing(Saved):
    """A ``Saved`` whose save found the entry already stored."""

    __slots__ = ()
    created = False
