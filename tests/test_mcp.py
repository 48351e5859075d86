"""``contextforge mcp``: the server started as a subprocess and driven by the MCP SDK's
own stdio client (or in process, over the SDK's memory streams), with the store checked
through the library. Streamable HTTP is in test_mcp_http.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from contextforge import ContextForge, __version__
from contextforge._core import Context
from contextforge.mcp_server import ScopePolicy, build_server
from contextforge.mcp_server.compat import MCP2, Server
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, InitializeResult, TextContent, TextResourceContents
from pydantic import AnyUrl

SERVER = ["-m", "contextforge.cli.main", "mcp"]
TOOLS = {
    "memory_changes",
    "memory_reads",
    "distill_session",
    "save_memory",
    "search_memory",
    "get_memory",
    "update_memory",
    "delete_memory",
    "forget_memory",
    "list_scopes",
    "distill_transcript",
    "memory_history",
    "memory_sources",
}

STATS = AnyUrl("memory://stats")

# Scopes an agent confined to "user:42" must never reach.
OUTSIDE = ["user:4", "user:420", "user:42:x", "team:a:x"]


@asynccontextmanager
async def handshake(db: Path, *flags: str) -> AsyncIterator[tuple[ClientSession, InitializeResult]]:
    """A session with ``contextforge mcp --db DB FLAGS`` over stdio, and the server's
    answer to ``initialize``."""
    params = StdioServerParameters(
        command=sys.executable,
        args=[*SERVER, "--db", str(db), *flags],
        env={"PYTHONPATH": os.environ.get("PYTHONPATH", "")},
    )
    with (db.parent / "server.log").open("a") as log, anyio.fail_after(60):
        async with (
            stdio_client(params, errlog=log) as (read, write),
            ClientSession(read, write) as session,
        ):
            yield session, await session.initialize()


@asynccontextmanager
async def connect(db: Path, *flags: str) -> AsyncIterator[ClientSession]:
    """A session with ``contextforge mcp --db DB FLAGS`` over stdio."""
    async with handshake(db, *flags) as (session, _):
        yield session


def field(model: Any, name: str) -> Any:
    """A field of an MCP protocol type by its snake_case name (mcp 2); mcp 1 spells
    it in camelCase (``is_error`` is ``isError``)."""
    if not MCP2:
        head, *rest = name.split("_")
        name = head + "".join(word.title() for word in rest)
    return getattr(model, name)


@asynccontextmanager
async def in_memory(server: Server) -> AsyncIterator[Any]:
    """A client session with ``server`` in this process, over the SDK's memory streams:
    ``mcp.client.Client`` on mcp 2, ``create_connected_server_and_client_session`` on 1."""
    if MCP2:
        from mcp.client import Client  # type: ignore[attr-defined, unused-ignore]

        async with Client(server) as client:
            yield client
    else:
        from mcp.shared.memory import (  # type: ignore[attr-defined, unused-ignore]
            create_connected_server_and_client_session,
        )

        async with create_connected_server_and_client_session(server) as session:
            yield session


async def read_stats(session: ClientSession) -> TextResourceContents:
    """The ``memory://stats`` resource."""
    uri: Any = str(STATS) if MCP2 else STATS
    stats = (await session.read_resource(uri)).contents[0]
    assert isinstance(stats, TextResourceContents)
    return stats


async def call(session: ClientSession, tool: str, **arguments: Any) -> CallToolResult:
    return await session.call_tool(tool, arguments)


async def result(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    """The structured result of a call that must succeed."""
    answer = await call(session, tool, **arguments)
    assert not field(answer, "is_error"), text(answer)
    data: dict[str, Any] | None = field(answer, "structured_content")
    assert data is not None
    return data


async def refused(session: ClientSession, tool: str, **arguments: Any) -> str:
    """The error text of a call that must fail."""
    answer = await call(session, tool, **arguments)
    assert field(answer, "is_error"), (
        f"{tool}({arguments}) was allowed: {field(answer, 'structured_content')}"
    )
    return text(answer)


def text(answer: CallToolResult) -> str:
    return "\n".join(c.text for c in answer.content if isinstance(c, TextContent))


async def seed(db: Path) -> dict[str | None, int]:
    """One entry in each of several scopes, all mentioning "secret"; ids by scope."""
    scopes: list[str | None] = ["user:42", *OUTSIDE, "team:ab", None]
    async with await ContextForge.open(str(db)) as store:
        ids = await store.save_many(
            [
                {"content": f"the secret of {scope or 'everyone'}", "scope": scope}
                for scope in scopes
            ]
        )
    return dict(zip(scopes, map(int, ids)))


async def snapshot(db: Path) -> list[tuple[Any, ...]]:
    async with await ContextForge.open(str(db)) as store:
        return sorted(
            [(h.id, h.content, h.kind, h.scope, json.dumps(h.metadata)) async for h in store.list()]
        )


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


async def test_tools_resources_and_untrusted_warnings(db: Path) -> None:
    async with connect(db, "--scope", "user:42") as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == TOOLS
        for name in ("save_memory", "search_memory", "get_memory", "update_memory"):
            assert "untrusted" in (tools[name].description or "")
        assert field(tools["search_memory"], "output_schema") is not None
        assert tools["search_memory"].annotations is not None
        assert field(tools["search_memory"].annotations, "read_only_hint") is True
        resources = (await session.list_resources()).resources
        assert [str(r.uri) for r in resources] == ["memory://stats"]


async def test_save_search_get_update_delete(db: Path) -> None:
    async with connect(db, "--scope", "user:42", "--scope", "user:42:work") as session:
        saved = await result(
            session,
            "save_memory",
            content="prefers green tea in the morning",
            kind="preference",
            metadata={"source": "chat"},
        )
        assert saved["scope"] == "user:42"  # the first --scope is the default
        assert saved["created"] is True
        again = await result(
            session,
            "save_memory",
            content="prefers  green tea in the morning",
            kind="preference",
            metadata={"source": "chat"},
        )
        assert again["id"] == saved["id"] and again["created"] is False
        other_session = await result(
            session,
            "save_memory",
            content="prefers green tea in the morning",
            kind="preference",
            metadata={"source": "chat"},
            session_id="s2",
        )
        assert other_session["created"] is True and other_session["id"] != saved["id"]
        await result(session, "delete_memory", id=other_session["id"])
        other = await result(
            session, "save_memory", content="standup is at nine", scope="user:42:work"
        )

        found = await call(session, "search_memory", query="tea", budget=512)
        assert not field(found, "is_error")
        block = text(found)
        assert "prefers green tea" in block and "untrusted" in block.lower()
        assert f"[mem:{saved['id']} " in block
        data = field(found, "structured_content")
        assert data is not None and data["context"] == block and data["scopes"] == ["user:42"]
        assert [h["id"] for h in data["hits"]] == [saved["id"]]
        assert data["hits"][0]["score"] > 0 and data["tokens"] <= 512

        both = await result(
            session, "search_memory", query="tea standup", scope=["user:42", "user:42:work"]
        )
        assert {h["id"] for h in both["hits"]} == {saved["id"], other["id"]}

        got = await result(session, "get_memory", id=saved["id"])
        assert got["metadata"] == {"source": "chat"} and got["kind"] == "preference"

        changed = await result(
            session, "update_memory", id=saved["id"], content="prefers coffee", scope="user:42:work"
        )
        assert changed["content"] == "prefers coffee" and changed["scope"] == "user:42:work"
        assert changed["kind"] == "preference"  # left out: kept

        scopes = await result(session, "list_scopes")
        assert scopes["scopes"] == [
            {"scope": "user:42", "entries": 0},
            {"scope": "user:42:work", "entries": 2},
        ]

        assert await result(session, "delete_memory", id=other["id"]) == {
            "id": other["id"],
            "deleted": True,
        }
        assert "not found" in await refused(session, "get_memory", id=other["id"])

        stats = await read_stats(session)
        assert json.loads(stats.text)["entries"] == 1


async def test_isolation_from_other_scopes(db: Path) -> None:
    ids = await seed(db)
    before = await snapshot(db)
    tricks: list[Any] = [
        *OUTSIDE,
        "team:ab",
        "user:42:../x",
        "user:42/../4",
        "*",
        "%",
        "user:%",
        "user:4*",
        "",
        " user:42",
        "user:42 ",
        "USER:42",
        "user:42\u200b",
        "user:42\n",
        ["user:42", "user:4"],
        ["*"],
        [],
    ]
    async with connect(db, "--scope", "user:42") as session:
        # The default scope only, whatever the query matches elsewhere.
        found = await result(session, "search_memory", query="secret", budget=4096)
        assert [h["scope"] for h in found["hits"]] == ["user:42"]
        assert "everyone" not in found["context"]

        for scope in tricks:
            error = await refused(session, "search_memory", query="secret", scope=scope)
            assert ("scope list is empty" if scope == [] else "not allowed") in error
            if isinstance(scope, str):
                await refused(session, "save_memory", content="planted", scope=scope)
                await refused(session, "update_memory", id=ids["user:42"], scope=scope)
        await refused(session, "search_memory", query="secret", include_global=True)

        # Entries of other scopes are "not found", exactly like missing ids.
        for scope, entry_id in ids.items():
            if scope == "user:42":
                continue
            for tool, extra in (
                ("get_memory", {}),
                ("delete_memory", {}),
                ("update_memory", {"content": "pwned"}),
            ):
                error = await refused(session, tool, id=entry_id, **extra)
                assert (
                    f"memory {entry_id} not found" in error and (scope or "everyone") not in error
                )
        for missing in (10**6, -1, 0):
            assert "not found" in await refused(session, "get_memory", id=missing)
        await refused(session, "get_memory", id=2**70)

        listed = await result(session, "list_scopes")
        assert listed["scopes"] == [{"scope": "user:42", "entries": 1}]
        stats = await read_stats(session)
        assert json.loads(stats.text)["scopes"] == [{"scope": "user:42", "entries": 1}]
    assert await snapshot(db) == before


async def test_prefix_and_global_policies(db: Path) -> None:
    ids = await seed(db)
    async with connect(db, "--scope-prefix", "team:a:", "--allow-global") as session:
        saved = await result(session, "save_memory", content="retro on friday", scope="team:a:x")
        assert saved["scope"] == "team:a:x"
        assert (await result(session, "save_memory", content="a global note"))["scope"] is None
        for scope in (
            "team:a:",
            "team:ab",
            "team:a",
            "team:a:../b",
            "team:a::b",
            "team:a:*",
            "team:a:%",
            "team:a:x y",
            "user:42",
        ):
            assert "not allowed" in await refused(session, "save_memory", content="x", scope=scope)

        found = await result(
            session, "search_memory", query="secret", scope="team:a:x", include_global=True
        )
        assert {h["scope"] for h in found["hits"]} == {"team:a:x", None}
        assert (await result(session, "get_memory", id=ids[None]))["scope"] is None
        await refused(session, "get_memory", id=ids["team:ab"])

    async with connect(db, "--scope-prefix", "team:a:") as session:
        assert "scope is required" in await refused(session, "save_memory", content="x")
        assert "not found" in await refused(session, "get_memory", id=ids[None])
        listed = await result(session, "list_scopes")
        assert listed["scopes"] == [{"scope": "team:a:x", "entries": 2}]


async def test_malformed_arguments_are_mcp_errors(db: Path) -> None:
    before = await snapshot(db)
    async with connect(db, "--scope", "user:42") as session:
        await refused(session, "search_memory")  # query missing
        for budget in ("lots", 0, -5, 10**9, None):
            await refused(session, "search_memory", query="x", budget=budget)
        await refused(session, "search_memory", query="x", kinds="note")
        await refused(session, "get_memory", id="abc")
        await refused(session, "get_memory")
        await refused(session, "save_memory", content=42)
        await refused(session, "save_memory", content="   ")
        await refused(session, "save_memory", content="x", kind="")
        await refused(session, "save_memory", content="x", metadata="not an object")
        await refused(session, "update_memory", id="1; DROP TABLE entries")
        assert "Unknown tool" in await refused(session, "no_such_tool")
        await refused(session, "distill_transcript", transcript="   ")
        await refused(session, "distill_transcript", transcript="a: b", scope="user:4")
    assert await snapshot(db) == before


@pytest.mark.parametrize(
    "flags",
    [[], ["--scope", "user:*"], ["--scope", ""], ["--scope-prefix", "team:%"]],
)
def test_server_refuses_to_start_without_a_safe_policy(db: Path, flags: list[str]) -> None:
    started = run_server(db, *flags)
    assert started.returncode == 2
    assert started.stderr.startswith("Error: ") and len(started.stderr.strip().splitlines()) == 1


def test_policy_rules() -> None:
    exact = ScopePolicy.create(["user:42"], [], allow_global=False)
    assert exact.allows("user:42") and exact.default == "user:42"
    for scope in ("user:4", "user:420", "user:42:x", "", None):
        assert not exact.allows(scope)

    spaced = ScopePolicy.create([], ["team:a"], allow_global=True)
    assert spaced.default is None
    for scope in ("team:a", "team:a:x", "team:a:x:y", "team:a:x/y", "team:a:x.y", None):
        assert spaced.allows(scope), scope
    for scope in (
        "team:ab",
        "team:a:",
        "team:a::x",
        "team:a:.",
        "team:a:..",
        "team:a:../x",
        "team:a:x/../y",
        "team:a:*",
        "team:a:%",
        "team:a:x y",
        "team:a:é",
        "",
    ):
        assert not spaced.allows(scope), scope

    trailing = ScopePolicy.create([], ["team:a:"], allow_global=False)
    assert trailing.allows("team:a:x") and not trailing.allows("team:a")


async def test_server_reports_its_own_version(db: Path) -> None:
    async with handshake(db, "--scope", "user:42") as (_, hello):
        assert field(hello, "server_info").name == "contextforge"
        assert field(hello, "server_info").version == __version__


@pytest.mark.parametrize("before_command", [False, True])
async def test_scrub_pii_redacts_what_the_tools_save(db: Path, before_command: bool) -> None:
    flags = ["--scope", "user:42"]
    server = [*SERVER, "--scrub-pii"] if not before_command else [*SERVER[:2], "--scrub-pii", "mcp"]
    params = StdioServerParameters(
        command=sys.executable,
        args=[*server, "--db", str(db), *flags],
        env={"PYTHONPATH": os.environ.get("PYTHONPATH", "")},
    )
    with anyio.fail_after(60):
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            saved = await result(
                session, "save_memory", content="send the invoice to alice.smith@example.com"
            )
            changed = await result(
                session,
                "update_memory",
                id=saved["id"],
                content="no, to bob.jones@example.org instead",
                metadata={"cc": "carol@example.net"},
            )
    for shown in (saved, changed):
        assert "@example." not in json.dumps(shown)
    async with await ContextForge.open(str(db)) as store:
        [stored] = [h async for h in store.list()]
    assert "@example." not in stored.content + json.dumps(stored.metadata)
    assert "[REDACTED" in stored.content and stored.content.startswith("no, to ")


class LeakyStore(ContextForge):
    """A store whose searches ignore the scopes asked for, as one did with a search
    index left from another database (issue 19 #1). The engine now refuses such
    hits itself; this stands in for any future fault of the kind, so that what the
    server returns never depends on the store filtering right."""

    async def context(self, q: str, scope: Any = None, *args: Any, **kwargs: Any) -> Context:
        return await super().context(q, list(await self.scopes()), *args, **kwargs)


async def test_search_text_is_built_only_from_allowed_hits(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with await LeakyStore.open(str(tmp_path / "memory.db")) as store:
        await store.save_many(
            [
                {"content": f"shopping list {n}: apples and {who}'s pears", "scope": f"user:{who}"}
                for n in range(20)
                for who in ("alice", "bob")
            ]
        )
        leaked = await store.context("shopping list apples", "user:bob", 4096)
        assert {h.scope for h in leaked.hits} == {"user:alice", "user:bob"}  # the fault is live

        policy = ScopePolicy.create(["user:bob"], [], allow_global=False)
        async with in_memory(build_server(store, policy)) as session:
            answer = await call(session, "search_memory", query="shopping list apples", budget=4096)
    assert field(answer, "is_error") and "outside this server's scopes" in text(answer)
    assert "alice" not in json.dumps(answer.model_dump(mode="json"))
    assert any(
        "outside this server's scopes" in r.getMessage() and r.levelname == "ERROR"
        for r in caplog.records
    )  # the operator is told


def run_server(db: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """``contextforge mcp --db DB FLAGS``, which must exit by itself (a refusal)."""
    return subprocess.run(
        [sys.executable, *SERVER, "--db", str(db), *flags],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
