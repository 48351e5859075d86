"""The MCP tools ``memory_changes``, ``memory_reads`` and ``distill_session``:
``contextforge mcp`` started as a subprocess and driven by the MCP SDK's stdio
client (or in process over the SDK's memory streams, for a store opened with
``audit_reads``), under the same scope policy as every other tool."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from contextforge import ALL_SCOPES, Config, ContextForge
from contextforge.mcp_server import ScopePolicy, build_server

from .test_mcp import OUTSIDE, call, connect, field, in_memory, refused, result, snapshot

NEW_TOOLS = {"memory_changes", "memory_reads", "distill_session"}


def reason(error: str) -> str:
    """A refusal without the tool's name ("Error executing tool NAME: ...")."""
    return error.split(": ", 1)[1]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


async def seed_writes(db: Path) -> dict[str, Any]:
    """Writes in user:42 and in every scope an agent confined to it must not see."""
    ids: dict[str, Any] = {}
    async with await ContextForge.open(str(db)) as store:
        mine = await store.save("my city is Paris", scope="user:42", key="user.city")
        for scope in [*OUTSIDE, "team:ab", None]:
            ids[str(scope)] = int(await store.save(f"secret of {scope}", scope=scope, key="k"))
        await store.update(int(mine), content="my city is Lyon")
        gone = await store.save("to delete", scope="user:42")
        await store.delete(int(gone))
        ids["mine"], ids["gone"] = int(mine), int(gone)
        ids["trail"] = [c async for c in store.changes()]
    return ids


async def test_the_tools_are_listed_with_their_contracts(db: Path) -> None:
    async with connect(db, "--scope", "user:42") as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
    assert NEW_TOOLS <= set(tools)
    for name in ("memory_changes", "memory_reads"):
        annotated = tools[name].annotations
        assert annotated is not None and field(annotated, "read_only_hint") is True
        assert field(tools[name], "output_schema") is not None
        assert "since=next" in (tools[name].description or "")
    assert "audit_reads" in (tools["memory_reads"].description or "")
    annotations = tools["distill_session"].annotations
    assert annotations is not None and field(annotations, "read_only_hint") is False
    assert set(field(tools["distill_session"], "input_schema")["required"]) == {
        "scope",
        "session_id",
    }


async def test_memory_changes_shows_only_the_allowed_scopes(db: Path) -> None:
    ids = await seed_writes(db)
    expected = [
        (c.seq, c.op, c.entry_id) for c in ids["trail"] if c.scope == "user:42"
    ]  # insert, update, insert, delete
    assert [op for _, op, _ in expected] == ["insert", "update", "insert", "delete"]
    async with connect(db, "--scope", "user:42") as session:
        trail = await result(session, "memory_changes")
        assert [(c["seq"], c["op"], c["entry_id"]) for c in trail["changes"]] == expected
        assert {c["scope"] for c in trail["changes"]} == {"user:42"}
        assert trail["changes"][0]["key"] == "user.city" and trail["more"] is False
        assert trail["changes"][0]["at"].endswith("+00:00")
        assert trail["next"] == ids["trail"][-1].seq  # past what it was not shown too
        shown = json.dumps(trail)
        assert "secret" not in shown and "Paris" not in shown  # never content
        assert all(
            str(ids[str(s)]) not in {str(c["entry_id"]) for c in trail["changes"]} for s in OUTSIDE
        )

        named = await result(session, "memory_changes", scope="user:42")
        assert named["changes"] == trail["changes"]
        # Another scope is refused exactly as the other tools refuse it.
        for scope in [*OUTSIDE, "team:ab", "", "*", "%", "user:4%", " user:42"]:
            error = await refused(session, "memory_changes", scope=scope)
            search = await refused(session, "search_memory", query="x", scope=scope)
            assert reason(error) == reason(search)
            assert "not allowed" in error
        for bad in ({"since": -1}, {"limit": 0}, {"limit": 1001}):
            assert field(await call(session, "memory_changes", **bad), "is_error")


async def test_memory_changes_shows_forgets_in_allowed_scopes_only(db: Path) -> None:
    async with await ContextForge.open(str(db)) as store:
        mine = int(await store.save("my card 4242", scope="user:42", session_id="s"))
        theirs = int(await store.save("their card", scope="user:4", session_id="s"))
        receipt = await store.forget(ids=[mine])
        await store.forget(ids=[theirs])
    async with connect(db, "--scope", "user:42") as session:
        trail = await result(session, "memory_changes")
    assert [(c["op"], c["entry_id"], c["forget"]) for c in trail["changes"]] == [
        ("insert", mine, None),
        ("forget", mine, receipt.id),
    ]


async def test_memory_changes_under_prefix_and_global_policies(db: Path) -> None:
    ids = await seed_writes(db)
    by_scope = {
        scope: [c.entry_id for c in ids["trail"] if c.scope == scope]
        for scope in ("team:a:x", None)
    }
    async with connect(db, "--scope-prefix", "team:a:", "--allow-global") as session:
        trail = await result(session, "memory_changes")
        assert [(c["scope"], c["entry_id"]) for c in trail["changes"]] == [
            ("team:a:x", ids["team:a:x"]),
            (None, ids["None"]),
        ]
        only = await result(session, "memory_changes", scope="team:a:x")
        assert [c["entry_id"] for c in only["changes"]] == by_scope["team:a:x"]
        assert "not allowed" in await refused(session, "memory_changes", scope="team:ab")
    async with connect(db, "--scope-prefix", "team:a:") as session:  # no global
        trail = await result(session, "memory_changes")
        assert [c["scope"] for c in trail["changes"]] == ["team:a:x"]


async def test_memory_changes_resumes_by_cursor(db: Path) -> None:
    async with await ContextForge.open(str(db)) as store:
        for n in range(7):
            await store.save(f"mine {n}", scope="user:42")
            await store.save(f"theirs {n}", scope="user:4")
        mine = [c.seq async for c in store.changes(scope="user:42")]
    async with connect(db, "--scope", "user:42") as session:
        seen: list[int] = []
        since, pages = 0, 0
        while True:
            page = await result(session, "memory_changes", since=since, limit=3)
            assert len(page["changes"]) <= 3
            seen += [c["seq"] for c in page["changes"]]
            since, pages = page["next"], pages + 1
            if not page["more"]:
                break
            assert pages < 10
        assert seen == mine and pages == 3
        assert (await result(session, "memory_changes", since=mine[-1]))["changes"] == []
        resumed = await result(session, "memory_changes", since=mine[3], scope="user:42")
        assert [c["seq"] for c in resumed["changes"]] == mine[4:]


async def test_changes_whose_scope_is_unknown_are_never_shown(db: Path) -> None:
    """A change logged before the store kept scopes reads as scope None: it must
    not pass for a change to a global entry."""
    ids = await seed_writes(db)
    with sqlite3.connect(db) as raw:
        raw.execute(
            "UPDATE changes SET at = NULL, scope = NULL WHERE entry_id = ?", [ids["user:4"]]
        )
    async with connect(db, "--scope", "user:42", "--allow-global") as session:
        trail = await result(session, "memory_changes")
    assert ids["user:4"] not in {c["entry_id"] for c in trail["changes"]}
    assert {c["scope"] for c in trail["changes"]} == {"user:42", None}


async def seed_reads(db: Path) -> dict[str, Any]:
    """Audited reads (written by an application that audits them) in user:42,
    other scopes, user:42 with global entries, and every scope at once."""
    config = Config(path=str(db), audit_reads=True, audit_query_text=True)
    async with await ContextForge.open(config) as store:
        mine = await store.save("deploy notes", scope="user:42")
        await store.save("deploy secret", scope="user:4")
        await store.save("deploy global", scope=None)
        await store.query("deploy 1", "user:42")
        await store.query("deploy 2", "user:4")
        await store.context("deploy 3", ["user:42", None], 512)
        await store.query("deploy 4", ALL_SCOPES)
        await store.context("deploy 5", ["user:42", "user:420"], 512)
        await store.query("deploy 6", "user:42")
        reads = [r async for r in store.reads()]
    assert [r.query for r in reads] == [f"deploy {n}" for n in range(1, 7)]
    return {"mine": int(mine), "reads": reads}


async def test_memory_reads_shows_reads_of_allowed_scopes_only(db: Path) -> None:
    seeded = await seed_reads(db)
    reads = seeded["reads"]
    async with connect(db, "--scope", "user:42") as session:
        audit = await result(session, "memory_reads")
        assert [r["query"] for r in audit["reads"]] == ["deploy 1", "deploy 6"]
        assert audit["reads"][0] == {
            "seq": reads[0].seq,
            "at": reads[0].at.isoformat(),
            "scopes": ["user:42"],
            "query_hash": reads[0].query_hash,
            "query": "deploy 1",
            "ids": [seeded["mine"]],
        }
        assert audit["audited"] is False and audit["more"] is False
        assert audit["next"] == reads[-1].seq
        assert "secret" not in json.dumps(audit)
        # Resumed a record at a time: the same records, past the hidden ones.
        first = await result(session, "memory_reads", limit=1)
        assert [r["seq"] for r in first["reads"]] == [reads[0].seq] and first["more"]
        rest = await result(session, "memory_reads", since=first["next"])
        assert [r["seq"] for r in rest["reads"]] == [reads[5].seq] and not rest["more"]
        assert (await result(session, "memory_reads", since=reads[-1].seq))["reads"] == []
    async with connect(db, "--scope", "user:42", "--allow-global") as session:
        audit = await result(session, "memory_reads")
        assert [r["query"] for r in audit["reads"]] == ["deploy 1", "deploy 3", "deploy 6"]
        assert audit["reads"][1]["scopes"] == ["user:42", None]
    async with connect(db, "--scope-prefix", "user:", "--allow-global") as session:
        audit = await result(session, "memory_reads")
        # Every scope at once (ALL_SCOPES) is never within a policy.
        assert "deploy 4" not in [r["query"] for r in audit["reads"]]
        assert len(audit["reads"]) == 5


async def test_memory_reads_on_a_store_that_does_not_audit_them(db: Path) -> None:
    async with await ContextForge.open(str(db)) as store:
        await store.save("deploy notes", scope="user:42")
        await store.query("deploy", "user:42")
    async with connect(db, "--scope", "user:42") as session:
        await result(session, "search_memory", query="deploy")
        audit = await result(session, "memory_reads")
    assert audit == {"reads": [], "next": 0, "more": False, "audited": False}


async def test_memory_reads_lists_the_servers_own_searches_when_audited() -> None:
    async with await ContextForge.open(Config(audit_reads=True)) as store:
        mine = await store.save("deploy notes", scope="user:42")
        await store.save("deploy secret", scope="user:4")
        server = build_server(store, ScopePolicy.create(["user:42"], [], allow_global=False))
        async with in_memory(server) as session:
            await result(session, "search_memory", query="deploy")
            audit = await result(session, "memory_reads")
            assert audit["audited"] is True
            assert [(r["scopes"], r["ids"]) for r in audit["reads"]] == [(["user:42"], [int(mine)])]
            await store.query("deploy", "user:4")  # not the agent's business
            again = await result(session, "memory_reads", since=audit["next"])
            assert again["reads"] == []


async def seed_sessions(db: Path) -> dict[str, list[int]]:
    """The same session id in user:42 and in user:4."""
    lines = {
        "user:42": [
            ("ann", "We decided to move billing to Postgres 16 next quarter."),
            ("bob", "Actually, the deadline is now 14 May."),
        ],
        "user:4": [("eve", "We decided the vault password rotates every Friday.")],
    }
    out: dict[str, list[int]] = {}
    async with await ContextForge.open(str(db)) as store:
        for scope, messages in lines.items():
            out[scope] = [
                int(
                    await store.save(text, scope=scope, session_id="call-7", metadata={"role": who})
                )
                for who, text in messages
            ]
    return out


async def test_distill_session_in_an_allowed_scope(db: Path) -> None:
    messages = await seed_sessions(db)
    async with connect(db, "--scope", "user:42") as session:
        done = await result(session, "distill_session", scope="user:42", session_id="call-7")
        assert done["model"] == "contextforge-extractive" and done["chunks"] == 1
        assert done["skipped"] == []
        texts = " ".join(i["text"] for i in done["saved"])
        assert "Postgres 16" in texts and "vault" not in texts
        facts = [i for i in done["saved"] if i["kind"] == "fact"]
        assert facts and all(set(i["sources"]) <= set(messages["user:42"]) for i in facts)
        assert all(i["sources"] for i in done["saved"])
        # Saved in the same scope and session, and readable by the agent.
        for item in done["saved"]:
            saved = await result(session, "get_memory", id=item["id"])
            assert (saved["scope"], saved["session_id"]) == ("user:42", "call-7")
        again = await result(session, "distill_session", scope="user:42", session_id="call-7")
        assert again["saved"] == []
        assert sorted(i["id"] for i in again["skipped"]) == sorted(i["id"] for i in done["saved"])
        error = await refused(session, "distill_session", scope="user:42", session_id="nope")
        assert "has no messages" in error
        assert field(await call(session, "distill_session", session_id="call-7"), "is_error")


async def test_distill_session_of_another_scope_is_refused_and_saves_nothing(db: Path) -> None:
    await seed_sessions(db)
    before = await snapshot(db)
    async with connect(db, "--scope", "user:42") as session:
        for scope in [*OUTSIDE, "team:ab", "", "user:4%", "*"]:
            error = await refused(session, "distill_session", scope=scope, session_id="call-7")
            search = await refused(session, "search_memory", query="x", scope=scope)
            assert reason(error) == reason(search)
            assert "vault" not in error and "eve" not in error
    assert await snapshot(db) == before
    async with connect(db, "--scope-prefix", "team:a:") as session:
        error = await refused(session, "distill_session", scope="user:4", session_id="call-7")
        assert "not allowed" in error
    assert await snapshot(db) == before


async def test_the_cursor_moves_past_what_is_not_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    """``next`` is the last record looked at, shown or not: an agent whose scope
    is quiet while others are busy is not sent over the same records again, and a
    call that stops at the scan bound still makes progress."""
    from contextforge.mcp_server import audit_tools

    monkeypatch.setattr(audit_tools, "_MAX_SCANNED", 5)
    async with await ContextForge.open(Config(audit_reads=True)) as store:
        mine = await store.save("mine", scope="user:42")
        await store.query("mine", "user:42")
        for n in range(12):
            await store.save(f"theirs {n}", scope="user:4")
            await store.query(f"theirs {n}", "user:4")
        last_change = [c.seq async for c in store.changes()][-1]
        last_read = [r.seq async for r in store.reads()][-1]
        server = build_server(store, ScopePolicy.create(["user:42"], [], allow_global=False))
        async with in_memory(server) as session:
            for tool, key, last in (
                ("memory_changes", "changes", last_change),
                ("memory_reads", "reads", last_read),
            ):
                first = await result(session, tool)
                assert len(first[key]) == 1 and first["more"] and first["next"] == 5
                since, calls = first["next"], 1
                while True:
                    page = await result(session, tool, since=since)
                    assert page[key] == [] and page["next"] > since
                    since, calls = page["next"], calls + 1
                    if not page["more"]:
                        break
                assert since == last and calls == 3
            later = await store.save("mine again", scope="user:42")
            after = await result(session, "memory_changes", since=since)
            assert [c["entry_id"] for c in after["changes"]] == [int(later)]
            assert int(mine) != int(later)
