"""Which scopes an MCP client may touch, decided by the operator at startup.

Whatever the agent sends, a scope is allowed only when it is

- exactly one of the ``--scope`` values (``user:42`` allows neither ``user:4``
  nor ``user:42:x``),
- a child of a ``--scope-prefix`` namespace: ``team:a:`` allows ``team:a:x``;
  a prefix without a trailing separator, ``team:a``, allows ``team:a`` itself
  and ``team:a:...`` but not ``team:ab``. Children must be made of letters,
  digits and ``_ - . : @ /``, with no empty, ``.`` or ``..`` segments, so that
  ``team:a:../b``, ``team:a:*``, ``team:a:%`` and ``team:a:`` are refused,
- or global (``None``) when ``--allow-global`` was given.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

__all__ = ["Policy", "ScopeDenied", "ScopePolicy"]

_CHILD = re.compile(r"[A-Za-z0-9_\-.:@/]+")
_SEGMENTS = re.compile(r"[:/]")
_WILDCARDS = set("*%?[]\\")


class ScopeDenied(ValueError):
    """A tool call named a scope outside the policy."""


class Policy(Protocol):
    """What the tools ask of a policy: a :class:`ScopePolicy`, or over authenticated
    HTTP the policy of the token that made the current call."""

    @property
    def scopes(self) -> tuple[str, ...]: ...
    @property
    def allow_global(self) -> bool: ...
    @property
    def default(self) -> str | None: ...
    def allows(self, scope: str | None) -> bool: ...
    def check(self, scope: str | None) -> str | None: ...
    def describe(self) -> str: ...
    def visible(self, scopes: Iterable[str | None]) -> list[str | None]: ...


@dataclass(frozen=True)
class ScopePolicy:
    scopes: tuple[str, ...]
    prefixes: tuple[str, ...]
    allow_global: bool

    @classmethod
    def create(
        cls, scopes: Iterable[str], prefixes: Iterable[str], *, allow_global: bool
    ) -> ScopePolicy:
        """A policy from the command line, refusing values that would widen it by accident."""
        exact = tuple(dict.fromkeys(scopes))
        spaces = tuple(dict.fromkeys(prefixes))
        for value in (*exact, *spaces):
            if not value.strip():
                raise ValueError("--scope and --scope-prefix must not be empty")
            if any(ch in _WILDCARDS for ch in value) or any(ord(ch) < 32 for ch in value):
                raise ValueError(f"scope {value!r} holds a wildcard or control character")
        if not (exact or spaces or allow_global):
            raise ValueError(
                "give the scopes the agent may use: --scope, --scope-prefix or --allow-global"
            )
        return cls(exact, spaces, allow_global)

    @property
    def default(self) -> str | None:
        """The scope used when a call names none."""
        if self.scopes:
            return self.scopes[0]
        if self.allow_global:
            return None
        raise ScopeDenied(
            "scope is required: name one under " + ", ".join(repr(p) for p in self.prefixes)
        )

    def allows(self, scope: str | None) -> bool:
        if scope is None:
            return self.allow_global
        if not isinstance(scope, str):
            return False
        if scope in self.scopes:
            return True
        return any(_under(prefix, scope) for prefix in self.prefixes)

    def check(self, scope: str | None) -> str | None:
        """``scope`` if allowed, else :class:`ScopeDenied` naming it."""
        if not self.allows(scope):
            shown = "global entries" if scope is None else f"scope {scope!r}"
            raise ScopeDenied(f"{shown} not allowed for this server (allowed: {self.describe()})")
        return scope

    def describe(self) -> str:
        parts = [*self.scopes, *(f"{p}*" for p in self.prefixes)]
        if self.allow_global:
            parts.append("global")
        return ", ".join(parts)

    def visible(self, scopes: Iterable[str | None]) -> list[str | None]:
        """The allowed ones among ``scopes``, in order."""
        return [s for s in scopes if self.allows(s)]


def _under(prefix: str, scope: str) -> bool:
    if prefix[-1] in ":/":
        rest = scope[len(prefix) :] if scope.startswith(prefix) else None
    elif scope == prefix:
        return True
    else:
        rest = scope[len(prefix) + 1 :] if scope.startswith(prefix + ":") else None
    if not rest or not _CHILD.fullmatch(rest):
        return False
    return all(seg not in ("", ".", "..") for seg in _SEGMENTS.split(rest))
