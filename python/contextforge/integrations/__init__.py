"""Adapters for agent frameworks, each an optional extra
(``pip install 'contextforge-memory[langgraph]'``): ``.langgraph``,
``.openai_agents``, ``.llamaindex`` and ``.adk``. Importing one whose framework
is not installed raises ``ImportError`` naming the extra to install.
"""

from __future__ import annotations

import importlib
import unicodedata
from types import ModuleType

from contextforge.memory import ContextForge
from contextforge.sync import ContextForgeSync

__all__ = ["escape_label", "require", "store_of"]


def require(module: str, extra: str) -> ModuleType:
    """``import module``, or an ``ImportError`` that says which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(
            f"{module} is not installed: pip install 'contextforge-memory[{extra}]'"
        ) from err


def store_of(
    cf: ContextForge | ContextForgeSync | None,
    store: ContextForge | ContextForgeSync | None,
    adapter: str,
) -> ContextForge:
    """The open store an adapter was given, first (``cf``) or as ``store=``;
    a ``ContextForgeSync`` gives the ``ContextForge`` behind it (``aio``)."""
    if cf is not None and store is not None:
        raise TypeError(f"give the store once: {adapter}(cf) or store=cf")
    given = cf if cf is not None else store
    if isinstance(given, ContextForgeSync):
        given = given.aio
    if not isinstance(given, ContextForge):
        raise TypeError(
            f"{adapter} takes an open ContextForge or ContextForgeSync, not {type(given).__name__}"
        )
    return given


def escape_label(label: str) -> str:
    """``label`` with ``%``, ``/`` and control characters percent-encoded, so
    that it is one scope level and two labels never escape to the same text."""
    out: list[str] = []
    for ch in label:
        if ch in "%/" or unicodedata.category(ch) == "Cc":
            out.extend(f"%{byte:02X}" for byte in ch.encode("utf-8"))
        else:
            out.append(ch)
    return "".join(out)
