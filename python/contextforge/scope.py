"""Which scopes a call reaches: ``ALL_SCOPES``, the one explicit way to say "every scope".

``None`` always means the global scope (entries saved without a scope), in
every method. A scope variable that happens to be ``None`` therefore never
widens a query to every tenant: reaching every scope takes ``ALL_SCOPES``.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Final, Literal

__all__ = ["ALL_SCOPES", "AllScopes", "Scope", "ScopeFilter"]


class AllScopes(enum.Enum):
    """The type of :data:`ALL_SCOPES` (its only value)."""

    ALL_SCOPES = "all scopes"

    def __repr__(self) -> str:
        return "contextforge.ALL_SCOPES"


ALL_SCOPES: Final = AllScopes.ALL_SCOPES
"""Every scope, global entries included: ``query(q, ALL_SCOPES)``, ``count(ALL_SCOPES)``."""

Scope = str | None | Sequence[str | None] | Literal[AllScopes.ALL_SCOPES]
"""What ``query`` and ``context`` search: a scope, ``None`` (global entries), a
list of them (``["user:42", None]``), or ``ALL_SCOPES``."""

ScopeFilter = str | None | Literal[AllScopes.ALL_SCOPES]
"""What ``count`` and ``list`` select: one scope, ``None`` (global entries) or ``ALL_SCOPES``."""
