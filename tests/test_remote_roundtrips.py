"""Round trips to a libSQL server, counted at a loopback proxy in front of a
real sqld: a plain save is one, a query one, a bulk save two, each on a stream
kept open from the call before. And what the batched paths must still get
right: duplicates by the full rule, vectors, another process's writes, text
that looks like SQL, all-or-nothing bulk saves, a stream the server lost."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TypeVar

import pytest
from contextforge import ALL_SCOPES, ContextForge, InvalidInputError, StorageError

from .hrana_proxy import CountingProxy, counting_proxy
from .sqld import Sqld, hrana, sqld_fixture  # noqa: F401  (provides the `sqld` fixture)

T = TypeVar("T")


async def trips(proxy: CountingProxy, call: Callable[[], Awaitable[T]]) -> tuple[int, T]:
    """How many requests reached the server during `call`, and its result."""
    before = proxy.count
    result = await call()
    return proxy.count - before, result


async def test_a_plain_save_is_one_round_trip_and_a_duplicate_too(sqld: Sqld) -> None:
    with counting_proxy(sqld.port) as proxy:
        async with await ContextForge.open(proxy.url) as cf:
            n, first = await trips(
                proxy, lambda: cf.save("the deploy failed: missing env var", scope="demo")
            )
            assert (n, first.created) == (1, True)
            # The same words after normalisation: the stored id, one round trip.
            n, again = await trips(
                proxy, lambda: cf.save("the  deploy failed:\nmissing env var", scope="demo")
            )
            assert (n, again, again.created) == (1, first, False)
            # The same words of another kind are not a duplicate (dedupe's full
            # rule): the first round trip inserted nothing, and the entry is
            # saved as a group (two more: the lookup is made again inside the
            # transaction that inserts it).
            n, other = await trips(
                proxy, lambda: cf.save("the deploy failed: missing env var", "fact", scope="demo")
            )
            assert other.created and other != first and n == 3
            # A turn of a session also reads the session's previous turns, which
            # the index keeps beside it.
            n, turn = await trips(
                proxy,
                lambda: cf.save("the deploy failed: missing env var", scope="demo", session_id="b"),
            )
            assert turn.created and turn not in (first, other) and n <= 5
            # The first vector records the store's embedder; each later one is a
            # plain save.
            await cf.save("first vector", scope="other", embedding=[0.0, 0.0, 1.0])
            n, vectored = await trips(
                proxy, lambda: cf.save("rollout notes", scope="demo", embedding=[0.6, 0.8, 0.0])
            )
            assert n == 1 and vectored.created
            got = await cf.get(turn)
            assert got is not None and got.session_id == "b"
            hits = await cf.query("anything", "demo", 1000, embedding=[0.6, 0.8, 0.0])
            assert [h.id for h in hits][:1] == [vectored]


PIPELINE = "/v3-protobuf/pipeline"
# A pipeline request's fields as protobuf writes them: the baton (field 1) of
# the stream it runs on, and a request that closes the stream (field 2 holding
# an empty `close`, field 1).
BATON = b"\x0a"
CLOSE = b"\x12\x02\x0a\x00"


def pipelines(proxy: CountingProxy, since: int = 0) -> list[bytes]:
    """The bodies of our client's requests from request `since` on."""
    return [
        body
        for (path, _), body in zip(proxy.requests[since:], proxy.bodies[since:], strict=True)
        if path.endswith(PIPELINE)
    ]


async def test_saves_and_queries_run_on_a_kept_stream(sqld: Sqld) -> None:
    """Opening a stream costs the server a connection of its own: after the
    first call, saves, queries and bulk saves run on a stream kept open, and
    none closes it."""
    with counting_proxy(sqld.port) as proxy:
        async with await ContextForge.open(proxy.url) as cf:
            await cf.save("the deploy failed: missing env var", scope="demo")
            await cf.query("deploy", "demo", 1000)
            since = proxy.count
            for i in range(5):
                n, _ = await trips(proxy, partial(cf.save, f"rollout step {i}", scope="demo"))
                assert n == 1
                n, hits = await trips(proxy, lambda: cf.query("rollout step", "demo", 1000))
                assert n == 1 and len(hits) == i + 1
            # A bulk save's two requests (lookups, then inserts and commit) too.
            n, ids = await trips(
                proxy,
                lambda: cf.save_many(
                    [{"content": f"bulk {i}", "scope": "demo"} for i in range(20)]
                ),
            )
            assert n == 2 and all(i.created for i in ids)
            sent = pipelines(proxy, since)
            assert len(sent) == 12
            assert all(body.startswith(BATON) and not body.endswith(CLOSE) for body in sent)
            before_close = proxy.count
        # Closing the store closes its kept streams (on a thread of their own).
        deadline = time.monotonic() + 10
        while not any(b.endswith(CLOSE) for b in pipelines(proxy, before_close)):
            assert time.monotonic() < deadline, "the kept stream was not closed"
            await asyncio.sleep(0.02)
        assert all(b.startswith(BATON) for b in pipelines(proxy, before_close))


async def test_a_restarted_server_loses_the_kept_stream_and_nothing_else(sqld: Sqld) -> None:
    """The server forgets its streams when it restarts: the next call's request
    on the kept stream is refused before anything runs, and is sent again on a
    new stream. Each save is stored once."""
    with counting_proxy(sqld.port) as proxy:
        async with await ContextForge.open(proxy.url) as cf:
            first = await cf.save("saved before the restart", scope="s")
            assert len(await cf.query("restart", "s", 1000)) == 1
            sqld.stop()
            sqld.start()
            since = len(proxy.requests)
            second = await cf.save("saved after the restart", scope="s")
            assert second.created and second != first
            # Refused on the lost stream, then sent on a new one.
            ours = [
                (status, body.startswith(BATON))
                for (path, status), body in zip(
                    proxy.requests[since:], proxy.bodies[since:], strict=True
                )
                if path.endswith(PIPELINE)
            ]
            assert ours[:2] == [(400, True), (200, False)], ours
            hits = await cf.query("restart", "s", 1000)
            assert sorted(h.content for h in hits) == [
                "saved after the restart",
                "saved before the restart",
            ]
            assert await cf.count(scope="s") == 2


async def test_a_store_idle_longer_than_the_server_keeps_a_stream_still_works(
    sqld: Sqld,
) -> None:
    """The server drops a stream idle for 10 seconds; a store idle longer
    saves and queries as before."""
    async with await ContextForge.open(sqld.url) as cf:
        await cf.save("before the pause", scope="s")
        await cf.query("pause", "s", 1000)
        await asyncio.sleep(11)
        after = await cf.save("after the pause", scope="s")
        assert after.created
        hits = await cf.query("pause", "s", 1000)
        assert sorted(h.content for h in hits) == ["after the pause", "before the pause"]


async def test_a_query_is_one_round_trip_and_sees_another_writer(sqld: Sqld) -> None:
    with counting_proxy(sqld.port) as proxy:
        async with (
            await ContextForge.open(proxy.url) as reader,
            await ContextForge.open(sqld.url) as writer,
        ):
            await reader.save("alpha bravo charlie", scope="s")
            await reader.query("bravo", "s", 1000)
            n, hits = await trips(proxy, lambda: reader.query("bravo", "s", 1000))
            assert n == 1 and [h.content for h in hits] == ["alpha bravo charlie"]
            # Another connection writes: the head read with the entries says the
            # index is behind, and the query catches up before it answers.
            await writer.save("bravo delta echo", scope="s")
            hits = await reader.query("bravo", "s", 1000)
            assert sorted(h.content for h in hits) == ["alpha bravo charlie", "bravo delta echo"]
            await writer.delete(hits[0].id)
            hits = await reader.query("bravo", "s", 1000)
            assert len(hits) == 1
            # A query that finds nothing still checks the head: one round trip.
            n, hits = await trips(proxy, lambda: reader.query("zulu", "s", 1000))
            assert n == 1 and list(hits) == []
            await writer.save("zulu yankee", scope="s")
            assert [h.content for h in await reader.query("zulu", "s", 1000)] == ["zulu yankee"]


async def test_a_query_that_packs_many_hits_is_one_round_trip(sqld: Sqld) -> None:
    """Packing, the diversity pass and the relevance floor read entries in
    rounds, refusing near-duplicates and weak replies as they go; over the
    network each round was a request (up to 17 for one query). Every candidate
    and the turn before it are now read at once, with the log's head."""
    # Twelve words, so that many entries share most of theirs.
    words = [letter * 5 for letter in "abcdefghijkl"]
    with counting_proxy(sqld.port) as proxy:
        async with await ContextForge.open(proxy.url) as cf:
            await cf.save_many(
                [
                    {
                        "content": f"note {i} {words[i % 12]} {words[i * 7 % 12]} bench entry",
                        "scope": f"s{i % 4}",
                        **({"session_id": f"chat{i % 8}"} if i % 2 else {}),
                    }
                    for i in range(1000)
                ]
            )
            await cf.query("alpha entry", "s0", 512)
            for i in range(24):
                text, scope = f"{words[i % 12]} entry", f"s{i % 4}"
                n, hits = await trips(proxy, partial(cf.query, text, scope, 512))
                assert n == 1, (i, n)
                assert len(hits) > 20 and all(h.scope == scope for h in hits)


async def test_a_query_answers_from_cached_entries_and_still_sees_other_writers(
    sqld: Sqld,
) -> None:
    """Entries a query packed are kept beside the index, so the next query
    reads only the log's head. Another process's update, move to another scope
    and delete move the head: the next query catches up, and returns the entry
    as it now is, or not at all."""
    with counting_proxy(sqld.port) as proxy:
        async with (
            await ContextForge.open(proxy.url) as reader,
            await ContextForge.open(sqld.url) as writer,
        ):
            ids = [
                await writer.save(f"rollout step {i} for the gateway", scope="ops")
                for i in range(6)
            ]
            assert len(await reader.query("gateway rollout", "ops", 4096)) == 6
            n, hits = await trips(proxy, lambda: reader.query("gateway rollout", "ops", 4096))
            assert n == 1 and len(hits) == 6
            await writer.update(ids[0], content="rollout step 0 for the gateway, revised")
            await writer.update(ids[1], scope="elsewhere")
            await writer.delete(ids[2])
            hits = await reader.query("gateway rollout", "ops", 4096)
            by_id = {h.id: h for h in hits}
            assert by_id[ids[0]].content == "rollout step 0 for the gateway, revised"
            assert ids[1] not in by_id and ids[2] not in by_id and len(hits) == 4
            moved = await reader.query("gateway rollout", "elsewhere", 4096)
            assert [(h.id, h.scope) for h in moved] == [(ids[1], "elsewhere")]


async def test_a_bulk_save_is_two_round_trips(sqld: Sqld) -> None:
    items = [
        {"content": f"bulk note {i} about topic {i % 7}", "scope": f"s{i % 3}"} for i in range(1200)
    ]
    items.append({"content": "bulk note 5 about topic 5", "scope": "s2"})  # repeats item 5
    with counting_proxy(sqld.port) as proxy:
        async with await ContextForge.open(proxy.url) as cf:
            n, saved = await trips(proxy, lambda: cf.save_many(items))
            assert n == 2
            assert len(saved) == len(items) and saved[-1] == saved[5] and not saved[-1].created
            assert len(set(saved)) == len(items) - 1
            created = [s for s in saved if s.created]
            assert created == sorted(created)
            # Saved again, every item is a duplicate of what is stored.
            n, again = await trips(proxy, lambda: cf.save_many(items))
            assert n == 2 and again == saved and not any(s.created for s in again)
            for i in (0, 599, 1199):
                got = await cf.get(saved[i])
                assert got is not None and got.content == items[i]["content"]
            hits = await cf.query("topic", "s1", 10**6, depth=10_000)
            assert len(hits) == 400
            # Vectors travel in the same two round trips (the first vector saved
            # records the store's embedder first).
            await cf.save("records the embedder", scope="v", embedding=[0.0, 0.0, 1.0])
            vectored = [
                {"content": "north", "scope": "v", "embedding": [1.0, 0.0, 0.0]},
                {"content": "east", "scope": "v", "embedding": [0.0, 1.0, 0.0]},
            ]
            n, pair = await trips(proxy, lambda: cf.save_many(vectored))
            assert n == 2
            hits = await cf.query("anything", "v", 1000, embedding=[0.0, 1.0, 0.0])
            assert hits[0].id == pair[1]
            hits = await cf.query("anything", "v", 1000, embedding=[1.0, 0.0, 0.0])
            assert hits[0].id == pair[0]
    async with await ContextForge.open(sqld.url) as fresh:
        assert len(await fresh.query("bulk", ALL_SCOPES, 10**7, depth=10_000)) == 1200


async def test_a_bad_bulk_save_changes_nothing(sqld: Sqld) -> None:
    async with await ContextForge.open(sqld.url) as cf:
        good = [{"content": f"kept out {i}", "scope": "s"} for i in range(10)]
        with pytest.raises(InvalidInputError):
            await cf.save_many([*good, {"content": "", "scope": "s"}])
        assert list(await cf.query("kept", "s", 10_000)) == []


def doomed(url: str) -> int:
    """How many entries of the scope "doomed" the server holds."""
    [result] = hrana(url, "SELECT COUNT(*) FROM entries WHERE scope = 'doomed'")
    return int(result["response"]["result"]["rows"][0][0]["value"])  # type: ignore[index]


@pytest.mark.parametrize("dedupe", [True, False])
async def test_a_save_the_server_fails_midway_writes_nothing(sqld: Sqld, dedupe: bool) -> None:
    """A statement that fails on the server after the entry was inserted (a
    trigger refuses its change-log row) skips the rest of its batch, COMMIT
    included, and the batch's last step rolls the transaction back: the same
    request leaves its stream outside any transaction, kept for the next call.
    With duplicate detection a bulk save is two requests, the transaction
    spanning both; without, one. Either way the write lock is let go."""
    with counting_proxy(sqld.port) as proxy:
        async with await ContextForge.open(proxy.url) as cf:
            await cf.save("before", scope="ok")
            [made] = hrana(
                sqld.url,
                "CREATE TRIGGER refuse BEFORE INSERT ON changes WHEN NEW.scope = 'doomed' "
                "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END",
            )
            assert made["type"] == "ok", made
            since = len(proxy.requests)
            with pytest.raises(StorageError, match="refused by the test"):
                await cf.save("one doomed entry", scope="doomed", dedupe=dedupe)
            # One request, on the kept stream, and no other to close it.
            sent = pipelines(proxy, since)
            assert len(sent) == 1 and sent[0].startswith(BATON) and not sent[0].endswith(CLOSE)
            with pytest.raises(StorageError, match="refused by the test"):
                await cf.save_many(
                    [
                        {"content": f"doomed entry {i}", "scope": "doomed", "dedupe": dedupe}
                        for i in range(30)
                    ]
                )
            assert doomed(sqld.url) == 0
            # Nothing holds the write lock: this handle and another one write now.
            await cf.save("after", scope="ok")
            async with await ContextForge.open(sqld.url) as other:
                await other.save("from another handle", scope="ok")
            hrana(sqld.url, "DROP TRIGGER refuse")
            ids = await cf.save_many(
                [
                    {"content": f"doomed entry {i}", "scope": "doomed", "dedupe": dedupe}
                    for i in range(30)
                ]
            )
            assert doomed(sqld.url) == 30 and all(i.created for i in ids)
            assert len(await cf.query("doomed entry", "doomed", 10_000)) == 30


@pytest.mark.parametrize(
    "text",
    [
        "it's a 'quoted' \"word\"; DROP TABLE entries; --",
        "placeholders ?1 ?2 ? :name @x $y",
        "unicode \u00e9\u4e2d\U0001f600 and a tab\there",
        "x" * 50_000,
    ],
)
async def test_any_text_saves_and_reads_back_exactly(sqld: Sqld, text: str) -> None:
    async with await ContextForge.open(sqld.url) as cf:
        one = await cf.save(text, scope="it's", metadata={"k": "v'?"})
        many = await cf.save_many([{"content": text + " again", "scope": "it's"}])
        got = await cf.get(one)
        assert got is not None and (got.content, got.scope) == (text, "it's")
        assert got.metadata == {"k": "v'?"}
        again = await cf.get(many[0])
        assert again is not None and again.content == text + " again"
    async with await ContextForge.open(sqld.url) as fresh:
        assert (await fresh.get(one)).content == text  # type: ignore[union-attr]
