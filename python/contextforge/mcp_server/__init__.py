"""An MCP server over a contextforge store, confined to the scopes it is started with.

Start it with ``contextforge mcp --scope user:42`` (see ``contextforge mcp --help``),
or embed it: ``build_server(store, ScopePolicy.create(["user:42"], [], allow_global=False))``
returns the MCP SDK's server (``FastMCP`` on mcp 1.x, ``MCPServer`` on mcp 2.x).
"""

from .http import InsecureBind
from .policy import ScopeDenied, ScopePolicy
from .run import serve
from .server import UNTRUSTED, build_server

__all__ = ["UNTRUSTED", "InsecureBind", "ScopeDenied", "ScopePolicy", "build_server", "serve"]
