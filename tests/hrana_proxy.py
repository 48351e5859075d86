"""A loopback HTTP proxy in front of sqld that counts round trips, and can
terminate TLS.

Every HTTP request a client sends to the libSQL server is one round trip. The
proxy forwards each request unchanged to the server and counts it, so a test
can assert how many round trips a call of the public API costs. Given an
`ssl.SSLContext`, it serves HTTPS (sqld itself serves plain HTTP), as a
TLS-terminating proxy in front of a server does.
"""

from __future__ import annotations

import http.client
import http.server
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# Hop-by-hop headers, and the ones the proxy sets itself.
SKIPPED = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


class CountingProxy:
    """Forwards HTTP on ``127.0.0.1`` to ``upstream_port``; ``count`` is the
    number of requests forwarded so far."""

    def __init__(self, upstream_port: int, tls: ssl.SSLContext | None = None) -> None:
        self.upstream_port = upstream_port
        self.count = 0
        # (path, HTTP status) of each request, in order.
        self.requests: list[tuple[str, int]] = []
        # The body of each request, in order.
        self.bodies: list[bytes] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _forward(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else None
                with proxy._lock:
                    proxy.count += 1
                upstream = http.client.HTTPConnection("127.0.0.1", proxy.upstream_port, timeout=60)
                try:
                    headers = {k: v for k, v in self.headers.items() if k.lower() not in SKIPPED}
                    upstream.request(self.command, self.path, body=body, headers=headers)
                    resp = upstream.getresponse()
                    data = resp.read()
                finally:
                    upstream.close()
                with proxy._lock:
                    proxy.requests.append((self.path, resp.status))
                    proxy.bodies.append(body or b"")
                self.send_response(resp.status)
                for key, value in resp.getheaders():
                    if key.lower() not in SKIPPED:
                        self.send_header(key, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = _forward
            do_POST = _forward

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        scheme = "http"
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
            scheme = "https"
        self.url = f"{scheme}://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def counting_proxy(
    upstream_port: int, tls: ssl.SSLContext | None = None
) -> Iterator[CountingProxy]:
    proxy = CountingProxy(upstream_port, tls)
    try:
        yield proxy
    finally:
        proxy.close()
