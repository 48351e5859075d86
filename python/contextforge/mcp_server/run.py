"""Running the server: open the store once, serve until the client goes away, close."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterable

from mcp.server.auth.provider import TokenVerifier
from mcp.server.auth.settings import AuthSettings

from ..config import Config, EncryptionKey
from ..memory import ContextForge
from .auth import HttpAuth, TokenFile
from .compat import run_streamable_http
from .http import check_bind, http_settings, transport_security
from .policy import ScopePolicy
from .server import build_server

__all__ = ["serve"]


def serve(
    path: str,
    policy: ScopePolicy | None = None,
    *,
    http: bool = False,
    host: str = "127.0.0.1",
    port: int = 8000,
    allowed_hosts: Iterable[str] = (),
    insecure_no_auth: bool = False,
    scrub_pii: bool | None = None,
    auth_token: str | None = None,
    encryption_key: EncryptionKey | None = None,
    tokens: str | os.PathLike[str] | None = None,
    token_verifier: TokenVerifier | None = None,
    auth_settings: AuthSettings | None = None,
) -> None:
    """Serves the store at ``path`` (a file, or a libSQL server's URL with its
    ``auth_token``) over stdio (or streamable HTTP at
    ``http://host:port/mcp``) until the client disconnects or the process is stopped.

    Over stdio, and over HTTP without tokens, every call is confined to ``policy``.
    Over HTTP, ``tokens`` (a tokens file, re-read on SIGHUP) or ``token_verifier``
    (the MCP SDK's hook, with ``auth_settings`` naming the OAuth issuer and this
    resource) requires a bearer token on every request and confines each call to
    what its token grants (see :mod:`~contextforge.mcp_server.auth`); ``policy`` is
    then not given.

    Over HTTP, a ``host`` that is not a loopback address raises
    :class:`~contextforge.mcp_server.http.InsecureBind` (a ``ValueError``) before
    anything is opened, unless the server authenticates or ``insecure_no_auth``.
    Requests must name a loopback host or one of ``allowed_hosts`` in their ``Host``
    header, whatever the bind. ``scrub_pii=True`` opens the store with
    ``Config(scrub_pii=True)``, so what the tools save is scrubbed of PII too;
    ``None`` (the default) keeps the store's own setting. ``encryption_key``
    opens an encrypted store (see :class:`~contextforge.Config`).
    """
    allowed = list(allowed_hosts)
    auth = _auth(http, tokens, token_verifier, auth_settings)
    if (policy is None) == (auth is None):
        raise ValueError("give a policy, or (over HTTP) tokens or a token verifier, not both")
    if http:
        check_bind(host, insecure_no_auth=insecure_no_auth, authenticated=auth is not None)
        transport_security(host, allowed)  # a bad allowed host fails here, before opening
    asyncio.run(
        _serve(
            Config(
                path=path,
                scrub_pii=scrub_pii,
                auth_token=auth_token,
                encryption_key=encryption_key,
            ),
            policy,
            auth,
            http=http,
            host=host,
            port=port,
            allowed_hosts=allowed,
        )
    )


def _auth(
    http: bool,
    tokens: str | os.PathLike[str] | None,
    verifier: TokenVerifier | None,
    settings: AuthSettings | None,
) -> HttpAuth | None:
    if tokens is None and verifier is None:
        if settings is not None:
            raise ValueError("auth_settings needs a token_verifier")
        return None
    if not http:
        raise ValueError("tokens and token verifiers apply to HTTP only")
    if tokens is not None and verifier is not None:
        raise ValueError("give tokens or a token_verifier, not both")
    if tokens is not None:
        return HttpAuth(TokenFile(tokens), settings)  # a bad file fails here, before opening
    assert verifier is not None
    return HttpAuth(verifier, settings)


async def _serve(
    config: Config,
    policy: ScopePolicy | None,
    auth: HttpAuth | None,
    *,
    http: bool,
    host: str,
    port: int,
    allowed_hosts: list[str],
) -> None:
    async with await ContextForge.open(config) as store:
        server = build_server(
            store, policy, host=host, port=port, allowed_hosts=allowed_hosts, auth=auth
        )
        if not http:
            await server.run_stdio_async()
            return
        reloadable = auth is not None and isinstance(auth.verifier, TokenFile)
        loop = asyncio.get_running_loop()
        if reloadable:
            assert auth is not None and isinstance(auth.verifier, TokenFile)
            loop.add_signal_handler(signal.SIGHUP, auth.verifier.reload)
        try:
            await run_streamable_http(server, http_settings(host, port, allowed_hosts))
        finally:
            if reloadable:
                loop.remove_signal_handler(signal.SIGHUP)
