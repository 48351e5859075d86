"""Keyed facts over MCP (issue 22): ``save_memory(key=...)`` and the
``memory_history`` tool, through the MCP SDK's stdio client, under the same
scope policy as every other tool."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from contextforge import ContextForge

from .test_mcp import OUTSIDE, connect, refused, result, snapshot


async def test_a_key_keeps_one_current_version_and_its_history(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    async with connect(db, "--scope", "user:42") as session:
        first = await result(
            session, "save_memory", content="lives in Berlin", kind="fact", key="user.city"
        )
        assert first["key"] == "user.city" and first["current"] is True
        moved = await result(
            session, "save_memory", content="lives in Paris", kind="fact", key="user.city"
        )
        assert moved["created"] is True and moved["id"] != first["id"]
        again = await result(
            session, "save_memory", content="lives  in Paris", key="user.city", kind="fact"
        )
        assert again["id"] == moved["id"] and again["created"] is False

        found = await result(session, "search_memory", query="where does the user live")
        assert [h["id"] for h in found["hits"]] == [moved["id"]]
        assert "Berlin" not in found["context"]

        history = await result(session, "memory_history", key="user.city")
        assert history["key"] == "user.city" and history["scope"] == "user:42"
        versions = history["versions"]
        assert [v["id"] for v in versions] == [first["id"], moved["id"]]
        assert [v["current"] for v in versions] == [False, True]
        assert versions[0]["superseded_by"] == moved["id"]
        assert versions[0]["valid_to"] == versions[1]["valid_from"]
        assert versions[1]["valid_to"] is None and versions[1]["superseded_by"] is None

        # A superseded version is still found by its id (it is what [mem:N] cites).
        old = await result(session, "get_memory", id=first["id"])
        assert old["current"] is False and old["superseded_by"] == moved["id"]

        assert (await result(session, "memory_history", key="no.such.key"))["versions"] == []
        await refused(session, "memory_history", key="")
        await refused(session, "memory_history")
        await refused(session, "save_memory", content="x", key="")


async def test_history_is_confined_like_every_other_tool(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    when = datetime(2024, 1, 1, tzinfo=timezone.utc)
    async with await ContextForge.open(str(db)) as store:
        for scope in ["user:42", *OUTSIDE, None]:
            await store.save(f"the city of {scope}", scope=scope, key="city", timestamp=when)
    before = await snapshot(db)
    async with connect(db, "--scope", "user:42") as session:
        mine = await result(session, "memory_history", key="city")
        assert [v["content"] for v in mine["versions"]] == ["the city of user:42"]
        for scope in [*OUTSIDE, "user:42 ", "USER:42", "*", "user:%", ""]:
            history = await refused(session, "memory_history", key="city", scope=scope)
            search = await refused(session, "search_memory", query="city", scope=scope)
            # The same refusal as a search there, but for the tool's name.
            assert "not allowed" in history
            assert history.split(": ", 1)[1] == search.split(": ", 1)[1]
            assert "the city of" not in history
            await refused(session, "save_memory", content="planted", key="city", scope=scope)
    assert await snapshot(db) == before

    async with connect(db, "--scope-prefix", "team:a:") as session:
        assert "scope is required" in await refused(session, "memory_history", key="city")
        assert "not allowed" in await refused(
            session, "memory_history", key="city", scope="team:ab"
        )
        assert (await result(session, "memory_history", key="city", scope="team:a:x"))["versions"][
            0
        ]["content"] == "the city of team:a:x"

    async with connect(db, "--allow-global") as session:
        everyone = await result(session, "memory_history", key="city")
        assert everyone["scope"] is None
        assert [v["content"] for v in everyone["versions"]] == ["the city of None"]
        await refused(session, "memory_history", key="city", scope="user:42")
