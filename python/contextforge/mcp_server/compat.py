"""The MCP SDK names the server uses, for mcp 1.x (>= 1.25) and 2.x.

mcp 2 renamed ``FastMCP`` to ``MCPServer`` (``mcp.server.mcpserver``), moved the
HTTP settings (host, port, Host/Origin checks) from the constructor to the run
call, takes the server's version as a constructor argument, and names the fields
of its protocol types in snake_case (``read_only_hint``, ``structured_content``),
which mcp 1 spells in camelCase. Everything else the server uses is the same in
both: ``@server.tool(...)``, ``@server.resource(...)``, ``run_stdio_async()``.

A type checker sees the installed SDK only: with mcp 2, ``Server`` is ``MCPServer``;
with mcp 1 it is ``Any`` (the 2.x import comes first and is missing). The tool code
goes through :class:`Tools`, a typed view of what it uses that both classes satisfy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.types import CallToolResult, TextContent, ToolAnnotations

from .auth import HttpAuth
from .http import HttpSettings

try:  # mcp >= 2
    from mcp.server.mcpserver import MCPServer as Server  # type: ignore[import-not-found, unused-ignore]
    from mcp.server.mcpserver.exceptions import ToolError  # type: ignore[import-not-found, unused-ignore]

    MCP2 = True
except ImportError:  # mcp 1.x: mcp.server.mcpserver does not exist
    from mcp.server.fastmcp import FastMCP as Server  # type: ignore[attr-defined, no-redef, unused-ignore]
    from mcp.server.fastmcp.exceptions import ToolError  # type: ignore[import-not-found, no-redef, unused-ignore]

    MCP2 = False

__all__ = [
    "MCP2",
    "Server",
    "ToolError",
    "Tools",
    "current_access_token",
    "hints",
    "new_server",
    "run_streamable_http",
    "tool_result",
]

Function = Callable[..., Any]


class Tools(Protocol):
    """What the tool code uses of a server (``FastMCP`` or ``MCPServer``)."""

    def tool(
        self,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | None = None,
    ) -> Callable[[Function], Function]: ...

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
    ) -> Callable[[Function], Function]: ...


def new_server(
    name: str,
    *,
    instructions: str,
    version: str,
    log_level: str,
    http: HttpSettings,
    auth: HttpAuth | None = None,
) -> Server:
    """A server named ``name`` that reports ``version`` to clients. On mcp 1 the HTTP
    settings are the server's own (so its ``run_streamable_http_async()`` uses them);
    on mcp 2 they are given to :func:`run_streamable_http`. With ``auth``, every HTTP
    request needs a bearer token its verifier accepts (both SDKs take the verifier
    and the auth settings in the constructor)."""
    options: dict[str, Any] = {"instructions": instructions, "log_level": log_level}
    if auth is not None:
        options.update(token_verifier=auth.granting(), auth=auth.sdk_settings(http.host, http.port))
    if MCP2:
        options["version"] = version
    else:
        options.update(host=http.host, port=http.port, transport_security=http.transport_security)
    server = Server(name, **options)
    if not MCP2:
        # FastMCP has no parameter for it; without this, clients see the SDK's version.
        fastmcp: Any = server
        fastmcp._mcp_server.version = version
    return server


async def run_streamable_http(server: Server, http: HttpSettings) -> None:
    """Serves ``server`` over streamable HTTP at ``http://HOST:PORT/mcp`` until stopped."""
    if MCP2:
        options: dict[str, Any] = {
            "host": http.host,
            "port": http.port,
            "transport_security": http.transport_security,
        }
        await server.run_streamable_http_async(**options)
    else:
        settings: Any = server.settings
        settings.host, settings.port = http.host, http.port
        settings.transport_security = http.transport_security
        await server.run_streamable_http_async()


def current_access_token() -> AccessToken | None:
    """The verified bearer token of the HTTP request that carried the current call.

    mcp 2 runs each call in a copy of its request's context, where the SDK's auth
    middleware left the token. mcp 1 runs it in its session's task, whose context
    is the request that opened the session: the call's own request is read from the
    SDK's request context instead."""
    if MCP2:
        return get_access_token()
    from mcp.server.lowlevel.server import request_ctx  # type: ignore[attr-defined, unused-ignore]

    try:
        request = request_ctx.get().request
    except LookupError:
        return None
    user = None if request is None else request.scope.get("user")
    return user.access_token if isinstance(user, AuthenticatedUser) else None


def hints(
    *, read_only: bool, destructive: bool | None = None, idempotent: bool | None = None
) -> ToolAnnotations:
    """Tool annotations (the hints are spelled differently by each SDK)."""
    given = {
        "readOnlyHint": read_only,
        "destructiveHint": destructive,
        "idempotentHint": idempotent,
    }
    return ToolAnnotations.model_validate({k: v for k, v in given.items() if v is not None})


def tool_result(text: str, structured: dict[str, Any]) -> CallToolResult:
    """A successful tool result with ``text`` for the model and ``structured`` data."""
    return CallToolResult.model_validate(
        {"content": [TextContent(type="text", text=text)], "structuredContent": structured}
    )
