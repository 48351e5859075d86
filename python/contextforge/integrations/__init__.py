"""Adapters for agent frameworks, each an optional extra
(``pip install 'contextforge-memory[langgraph]'``): ``.langgraph``,
``.openai_agents``, ``.llamaindex`` and ``.adk``. Importing one whose framework
is not installed raises ``ImportError`` naming the extra to install.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["require"]


def require(module: str, extra: str) -> ModuleType:
    """``import module``, or an ``ImportError`` that says which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(
            f"{module} is not installed: pip install 'contextforge-memory[{extra}]'"
        ) from err
