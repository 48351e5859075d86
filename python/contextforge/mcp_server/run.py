"""Running the server: open the store once, serve until the client goes away, close."""

from __future__ import annotations

import asyncio

from ..config import Config
from ..memory import ContextForge
from .policy import ScopePolicy
from .server import build_server

__all__ = ["serve"]


def serve(path: str, policy: ScopePolicy, *, http: bool = False, host: str = "127.0.0.1",
          port: int = 8000) -> None:
    """Serves the store at ``path`` over stdio (or streamable HTTP at
    ``http://host:port/mcp``) until the client disconnects or the process is stopped."""
    asyncio.run(_serve(path, policy, http=http, host=host, port=port))


async def _serve(path: str, policy: ScopePolicy, *, http: bool, host: str, port: int) -> None:
    async with await ContextForge.open(Config(path=path)) as store:
        server = build_server(store, policy, host=host, port=port)
        if http:
            await server.run_streamable_http_async()
        else:
            await server.run_stdio_async()
