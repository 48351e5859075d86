"""Who may call the server over HTTP, and with which scopes: bearer tokens.

Every HTTP request must carry ``Authorization: Bearer <token>``. A token verifier
(the MCP SDK's ``TokenVerifier`` hook) turns the token into the SDK's
``AccessToken``, and the token's OAuth scopes grant memory scopes by one rule:

- ``memory:scope:S`` allows the scope ``S`` exactly (the first one is the default
  for calls that name none),
- ``memory:prefix:P`` allows every scope under ``P``, as ``--scope-prefix P``,
- ``memory:global`` allows global (unscoped) entries, as ``--allow-global``;

other scopes are ignored. A token that grants none is refused like a wrong one
(401). Each call is confined to the scopes of the token its own request carried, so
one server serves several agents, each confined as the stdio flags would confine it.

:class:`TokenFile` is the verifier behind ``contextforge mcp --http --tokens FILE``:
a JSON object mapping each token to its policy, in the stdio flags' vocabulary::

    {"<token>": {"scopes": ["user:alice"], "scope_prefixes": ["team:a:"],
                 "allow_global": false, "name": "alice-bot", "expires_at": 1893456000}}

Only the tokens' SHA-256 digests are kept; a presented token is compared with every
one in constant time; no token is logged or echoed, and errors about the file name
entries by position or ``name``, never by token. :meth:`TokenFile.reload` (on SIGHUP)
re-reads the file; a file that no longer loads keeps the previous tokens (and
says why in the log), and ``{}`` revokes every token.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import stat
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.settings import AuthSettings

from .policy import ScopeDenied, ScopePolicy

__all__ = [
    "GLOBAL_GRANT",
    "PREFIX_GRANT",
    "SCOPE_GRANT",
    "CallerPolicy",
    "HttpAuth",
    "TokenFile",
    "TokenFileError",
    "grants",
    "policy_from_grants",
]

SCOPE_GRANT = "memory:scope:"
PREFIX_GRANT = "memory:prefix:"
GLOBAL_GRANT = "memory:global"

#: Shorter tokens are refused when a file is loaded: they could be guessed.
MIN_TOKEN_LENGTH = 16

_FIELDS = {"scopes", "scope_prefixes", "allow_global", "name", "expires_at"}

_log = logging.getLogger("contextforge.mcp")


class TokenFileError(ValueError):
    """A tokens file that cannot be used: unreadable, not JSON, or a bad entry."""


def grants(policy: ScopePolicy) -> list[str]:
    """The OAuth scopes that grant ``policy`` (the inverse of :func:`policy_from_grants`)."""
    given = [SCOPE_GRANT + s for s in policy.scopes]
    given += [PREFIX_GRANT + p for p in policy.prefixes]
    return [*given, GLOBAL_GRANT] if policy.allow_global else given


def policy_from_grants(scopes: Iterable[str]) -> ScopePolicy | None:
    """The memory scopes a token's OAuth ``scopes`` grant, or ``None`` when they
    grant none (or grant something the stdio flags would refuse, like a wildcard)."""
    return _policy(tuple(scopes))


@lru_cache(maxsize=1024)
def _policy(scopes: tuple[str, ...]) -> ScopePolicy | None:
    exact = [s.removeprefix(SCOPE_GRANT) for s in scopes if s.startswith(SCOPE_GRANT)]
    spaces = [s.removeprefix(PREFIX_GRANT) for s in scopes if s.startswith(PREFIX_GRANT)]
    try:
        return ScopePolicy.create(exact, spaces, allow_global=GLOBAL_GRANT in scopes)
    except ValueError:
        return None


@dataclass(frozen=True)
class HttpAuth:
    """How the HTTP server authenticates: a token verifier, and the SDK's
    ``AuthSettings`` when an OAuth authorization server issues the tokens (its
    ``issuer_url`` and this server's ``resource_server_url``, which the server then
    advertises as OAuth protected-resource metadata). Without settings, nothing is
    advertised."""

    verifier: TokenVerifier
    settings: AuthSettings | None = None

    def sdk_settings(self, host: str, port: int) -> AuthSettings:
        """The settings the SDK is given. It requires an issuer even when no
        authorization server is involved (a tokens file): the server's own URL then,
        which is never advertised because no resource URL is set."""
        if self.settings is not None:
            return self.settings
        shown = f"[{host}]" if ":" in host else host
        return AuthSettings(issuer_url=f"http://{shown}:{port}", resource_server_url=None)  # type: ignore[arg-type]

    def granting(self) -> TokenVerifier:
        """The verifier as served: tokens that grant no memory scope are refused."""
        return _Granting(self.verifier)


class _Granting:
    def __init__(self, inner: TokenVerifier) -> None:
        self._inner = inner

    async def verify_token(self, token: str) -> AccessToken | None:
        verified = await self._inner.verify_token(token)
        if verified is None or policy_from_grants(verified.scopes) is None:
            return None
        return verified


class CallerPolicy:
    """The policy of whoever made the current call: the grants of the bearer token
    its own HTTP request carried. It answers like a :class:`ScopePolicy`."""

    def __init__(self, current_token: Callable[[], AccessToken | None]) -> None:
        self._current_token = current_token

    def _policy(self) -> ScopePolicy:
        token = self._current_token()
        policy = None if token is None else policy_from_grants(token.scopes)
        if policy is None:  # the verifier refuses such tokens, so only a misuse gets here
            raise ScopeDenied("this call carries no token that grants memory scopes")
        return policy

    @property
    def scopes(self) -> tuple[str, ...]:
        return self._policy().scopes

    @property
    def prefixes(self) -> tuple[str, ...]:
        return self._policy().prefixes

    @property
    def allow_global(self) -> bool:
        return self._policy().allow_global

    @property
    def default(self) -> str | None:
        return self._policy().default

    def allows(self, scope: str | None) -> bool:
        return self._policy().allows(scope)

    def check(self, scope: str | None) -> str | None:
        return self._policy().check(scope)

    def describe(self) -> str:
        return self._policy().describe()

    def visible(self, scopes: Iterable[str | None]) -> list[str | None]:
        return self._policy().visible(scopes)


@dataclass(frozen=True)
class _Entry:
    digest: bytes
    client_id: str
    grants: tuple[str, ...]
    expires_at: int | None


class TokenFile:
    """The tokens of a JSON file, as a token verifier (see the module's docs)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._entries = load_tokens(self.path)

    def __repr__(self) -> str:
        return f"TokenFile({str(self.path)!r}, {len(self._entries)} tokens)"

    def __len__(self) -> int:
        return len(self._entries)

    def reload(self) -> bool:
        """Re-reads the file; whether it loaded. A file that no longer loads keeps
        the tokens loaded before, and the reason is logged."""
        try:
            self._entries = load_tokens(self.path)
        except TokenFileError as err:
            _log.error("kept the previous tokens: %s", err)
            return False
        _log.warning("reloaded %d tokens from %s", len(self._entries), self.path)
        return True

    async def verify_token(self, token: str) -> AccessToken | None:
        digest = _digest(token)
        found = None
        for entry in self._entries:  # every entry, whichever matches: constant time
            if hmac.compare_digest(entry.digest, digest):
                found = entry
        if found is None or (found.expires_at is not None and found.expires_at <= time.time()):
            return None
        return AccessToken(
            token="sha256:" + found.digest.hex()[:16],  # never the token itself
            client_id=found.client_id,
            scopes=list(found.grants),
            expires_at=found.expires_at,
        )


def load_tokens(path: Path) -> tuple[_Entry, ...]:
    """The entries of a tokens file, or :class:`TokenFileError` naming what is wrong."""
    try:
        text = path.read_text(encoding="utf-8")
        mode = path.stat().st_mode
    except (OSError, UnicodeDecodeError) as err:
        raise TokenFileError(f"cannot read the tokens file {str(path)!r}: {err}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        _log.warning("the tokens file %s can be read by other users: chmod 600 it", path)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as err:
        raise TokenFileError(f"the tokens file {str(path)!r} is not JSON: {err}") from None
    if not isinstance(document, dict):
        raise TokenFileError(
            f"the tokens file {str(path)!r} must be a JSON object mapping each token to "
            'its policy, e.g. {"<token>": {"scopes": ["user:alice"]}} ({} admits nobody)'
        )
    entries = [_entry(n, token, policy) for n, (token, policy) in enumerate(document.items(), 1)]
    names = [e.client_id for e in entries]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate is not None:
        raise TokenFileError(f"two tokens are named {duplicate!r}: names must be unique")
    return tuple(entries)


def _entry(number: int, token: Any, given: Any) -> _Entry:
    where = f"entry {number}"
    if not isinstance(given, dict):
        raise TokenFileError(f"{where}: the policy must be a JSON object")
    name = given.get("name")
    if name is not None:
        if not isinstance(name, str) or not name.strip():
            raise TokenFileError(f"{where}: name must be a non-empty string")
        where = f"entry {number} ({name!r})"
    if not isinstance(token, str) or len(token) < MIN_TOKEN_LENGTH:
        raise TokenFileError(f"{where}: a token must be at least {MIN_TOKEN_LENGTH} characters")
    if token != token.strip() or any(ord(ch) < 33 or ord(ch) > 126 for ch in token):
        raise TokenFileError(f"{where}: a token must be printable ASCII without spaces")
    unknown = sorted(set(given) - _FIELDS)
    if unknown:
        raise TokenFileError(
            f"{where}: unknown field(s) {', '.join(unknown)} (known: {', '.join(sorted(_FIELDS))})"
        )
    scopes = _strings(where, given, "scopes")
    prefixes = _strings(where, given, "scope_prefixes")
    allow_global = given.get("allow_global", False)
    if not isinstance(allow_global, bool):
        raise TokenFileError(f"{where}: allow_global must be true or false")
    try:
        policy = ScopePolicy.create(scopes, prefixes, allow_global=allow_global)
    except ValueError as err:
        raise TokenFileError(f"{where}: {err}") from None
    digest = _digest(token)
    return _Entry(
        digest=digest,
        client_id=name if name is not None else "token-" + digest.hex()[:12],
        grants=tuple(grants(policy)),
        expires_at=_expiry(where, given.get("expires_at")),
    )


def _strings(where: str, given: dict[str, Any], field: str) -> list[str]:
    value = given.get(field, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TokenFileError(f"{where}: {field} must be a list of strings")
    return value


def _expiry(where: str, value: Any) -> int | None:
    """``expires_at``: Unix seconds, or an ISO 8601 time with a zone."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        if value <= 0:  # the SDK reads a falsy expiry as none
            raise TokenFileError(f"{where}: expires_at must be a positive Unix time")
        return value
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            moment = None
        if moment is not None and moment.tzinfo is not None:
            return int(moment.timestamp())
    raise TokenFileError(
        f"{where}: expires_at must be Unix seconds or an ISO 8601 time with a zone, "
        "e.g. 2027-01-01T00:00:00Z"
    )


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
