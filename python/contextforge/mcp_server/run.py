"""Running the server: open the store once, serve until the client goes away, close."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from ..config import Config
from ..memory import ContextForge
from .compat import run_streamable_http
from .http import check_bind, http_settings, transport_security
from .policy import ScopePolicy
from .server import build_server

__all__ = ["serve"]


def serve(
    path: str,
    policy: ScopePolicy,
    *,
    http: bool = False,
    host: str = "127.0.0.1",
    port: int = 8000,
    allowed_hosts: Iterable[str] = (),
    insecure_no_auth: bool = False,
    scrub_pii: bool | None = None,
    auth_token: str | None = None,
) -> None:
    """Serves the store at ``path`` (a file, or a libSQL server's URL with its
    ``auth_token``) over stdio (or streamable HTTP at
    ``http://host:port/mcp``) until the client disconnects or the process is stopped.

    Over HTTP, a ``host`` that is not a loopback address raises
    :class:`~contextforge.mcp_server.http.InsecureBind` (a ``ValueError``) before
    anything is opened, unless ``insecure_no_auth``: the server has no authentication.
    Requests must name a loopback host or one of ``allowed_hosts`` in their ``Host``
    header, whatever the bind. ``scrub_pii=True`` opens the store with
    ``Config(scrub_pii=True)``, so what the tools save is scrubbed of PII too;
    ``None`` (the default) keeps the store's own setting.
    """
    allowed = list(allowed_hosts)
    if http:
        check_bind(host, insecure_no_auth=insecure_no_auth)
        transport_security(host, allowed)  # a bad allowed host fails here, before opening
    asyncio.run(
        _serve(
            Config(path=path, scrub_pii=scrub_pii, auth_token=auth_token),
            policy,
            http=http,
            host=host,
            port=port,
            allowed_hosts=allowed,
        )
    )


async def _serve(
    config: Config,
    policy: ScopePolicy,
    *,
    http: bool,
    host: str,
    port: int,
    allowed_hosts: list[str],
) -> None:
    async with await ContextForge.open(config) as store:
        server = build_server(store, policy, host=host, port=port, allowed_hosts=allowed_hosts)
        if http:
            await run_streamable_http(server, http_settings(host, port, allowed_hosts))
        else:
            await server.run_stdio_async()
