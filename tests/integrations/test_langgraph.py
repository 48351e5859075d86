"""ContextForgeStore through LangGraph's and LangMem's own entry points (no LLM,
no network). langgraph-checkpoint-sqlite's store suite runs against it through
tests/integrations/langgraph_suite.py."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any, TypedDict

import pytest

pytest.importorskip("langgraph.store.base")

import pytest_asyncio
from contextforge import ContextForge, ContextForgeSync
from contextforge.integrations.langgraph import (
    KIND,
    ContextForgeStore,
    namespace_to_scope,
    scope_to_namespace,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp


@pytest_asyncio.fixture
async def store() -> AsyncIterator[ContextForgeStore]:
    async with ContextForge.open() as cf:
        adapter = ContextForgeStore(cf)
        yield adapter
        adapter.close()


@pytest.fixture
def sync_store() -> Iterator[ContextForgeStore]:
    with ContextForgeSync.open() as cf:
        adapter = ContextForgeStore(store=cf)  # a sync handle is taken too
        assert adapter.contextforge is cf.aio
        yield adapter
        adapter.close()


# A graph whose node writes and reads through runtime.store -------------------------------


class State(TypedDict):
    user: str
    fact: str
    recalled: list[str]


def _graph(store: ContextForgeStore) -> Any:
    def remember(state: State, runtime: Runtime[None]) -> dict[str, Any]:
        assert runtime.store is store
        ns = ("users", state["user"], "facts")
        runtime.store.put(ns, f"fact-{len(state['fact'])}", {"text": state["fact"]})
        found = runtime.store.search(ns, query=state["fact"].split()[0])
        return {"recalled": [item.value["text"] for item in found]}

    async def aremember(state: State, runtime: Runtime[None]) -> dict[str, Any]:
        assert runtime.store is not None
        ns = ("users", state["user"], "facts")
        await runtime.store.aput(ns, f"fact-{len(state['fact'])}", {"text": state["fact"]})
        found = await runtime.store.asearch(ns, query=state["fact"].split()[0])
        return {"recalled": [item.value["text"] for item in found]}

    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_node("aremember", aremember)
    builder.add_conditional_edges(
        START, lambda s: "aremember" if s["user"].startswith("async") else "remember"
    )
    builder.add_edge("remember", END)
    builder.add_edge("aremember", END)
    return builder.compile(store=store)


def test_graph_invoke_writes_and_reads_through_the_store(sync_store: ContextForgeStore) -> None:
    graph = _graph(sync_store)
    out = graph.invoke({"user": "ann", "fact": "Ann likes green tea", "recalled": []})
    assert out["recalled"] == ["Ann likes green tea"]
    out = graph.invoke({"user": "bob", "fact": "Bob likes coffee", "recalled": []})
    assert out["recalled"] == ["Bob likes coffee"]  # never Ann's

    item = sync_store.get(("users", "ann", "facts"), "fact-19")
    assert item is not None and item.value == {"text": "Ann likes green tea"}
    with ContextForgeSync.sharing(sync_store.contextforge) as cf:
        assert cf.scopes() == {"langgraph/users/ann/facts": 1, "langgraph/users/bob/facts": 1}


async def test_graph_ainvoke_writes_and_reads_through_the_store(
    store: ContextForgeStore,
) -> None:
    graph = _graph(store)
    out = await graph.ainvoke({"user": "async-ann", "fact": "Ann plays chess", "recalled": []})
    assert out["recalled"] == ["Ann plays chess"]
    # The sync path (batch, through the shared twin) reads what the async path wrote.
    assert [i.key for i in store.search(("users", "async-ann"))] == ["fact-15"]
    hits = await store.contextforge.query("", scope_prefix="langgraph/users", kinds=[KIND])
    assert [h.scope for h in hits] == ["langgraph/users/async-ann/facts"]


# The store's own contract -----------------------------------------------------------------


async def test_put_get_update_delete_keeps_versions(store: ContextForgeStore) -> None:
    ns = ("docs", "a")
    await store.aput(ns, "k", {"v": 1})
    first = await store.aget(ns, "k")
    assert first is not None and first.value == {"v": 1}
    await asyncio.sleep(0.01)
    await store.aput(ns, "k", {"v": 2})
    second = await store.aget(ns, "k")
    assert second is not None and second.value == {"v": 2}
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at
    cf = store.contextforge
    assert [h.metadata["value"] for h in await cf.history("k", "langgraph/docs/a")] == [
        {"v": 1},
        {"v": 2},
    ]
    await store.adelete(ns, "k")
    assert await store.aget(ns, "k") is None
    assert await cf.history("k", "langgraph/docs/a") == []


async def test_search_filters_pages_and_ranks(store: ContextForgeStore) -> None:
    ns = ("items",)
    for i in range(5):
        await store.aput(
            ns, f"i{i}", {"price": i * 10, "tags": {"color": "red" if i % 2 else "blue"}}
        )
    cheap = await store.asearch(ns, filter={"price": {"$lt": 25}})
    assert [i.key for i in cheap] == ["i2", "i1", "i0"]  # newest first, no scores
    assert all(i.score is None for i in cheap)
    assert [i.key for i in await store.asearch(ns, filter={"tags.color": "red"})] == ["i3", "i1"]
    assert [i.key for i in await store.asearch(ns, filter={"tags": {"color": "red"}})] == [
        "i3",
        "i1",
    ]
    assert [i.key for i in await store.asearch(ns, limit=2, offset=1)] == ["i3", "i2"]
    assert len(await store.asearch(ns, filter={"price": {"$lt": float("inf")}})) == 5
    assert await store.asearch(ns, filter={"price": float("nan")}) == []
    with pytest.raises(ValueError, match="Invalid filter key"):
        await store.asearch(ns, filter={"price.": 1})

    await store.aput(("notes",), "n1", {"text": "the deploy failed on Friday"}, index=["text"])
    await store.aput(("notes",), "n2", {"text": "lunch at noon", "other": "deploy"}, index=["text"])
    ranked = await store.asearch(("notes",), query="deploy failure")
    assert [i.key for i in ranked] == ["n1"]
    assert ranked[0].score is not None and ranked[0].score > 0
    json.dumps([i.dict() for i in ranked])


async def test_list_namespaces(store: ContextForgeStore) -> None:
    for ns in [("a", "b", "c"), ("a", "x", "c"), ("a", "b", "d"), ("z",)]:
        await store.aput(ns, "k", {"n": 1})
    assert await store.alist_namespaces(prefix=("a", "*", "c")) == [
        ("a", "b", "c"),
        ("a", "x", "c"),
    ]
    assert await store.alist_namespaces(suffix=("c",)) == [("a", "b", "c"), ("a", "x", "c")]
    assert await store.alist_namespaces(max_depth=1) == [("a",), ("z",)]
    assert await store.alist_namespaces(prefix=("a",), limit=1, offset=1) == [("a", "b", "d")]


async def test_invalid_namespaces_are_refused_before_anything_runs(
    store: ContextForgeStore,
) -> None:
    for bad in [("a.b",), ("",), ("x", "\x00")]:
        with pytest.raises(InvalidNamespaceError):
            await store.aput(bad, "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        await store.abatch([PutOp(("ok",), "k", {"v": 1}), GetOp(("a.b",), "k")])
    assert await store.contextforge.count() == 0


def test_ttl_expires_refreshes_and_sweeps() -> None:
    with ContextForgeSync.open() as cf:
        store = ContextForgeStore(cf.aio, ttl={"default_ttl": 1 / 60, "refresh_on_read": True})
        store.put(("t",), "short", {"v": 1})
        store.put(("t",), "long", {"v": 2}, ttl=None)
        store.put(("t",), "short", {"v": 3})  # a second version, expiring with the first
        time.sleep(0.6)
        assert store.get(("t",), "short") is not None  # read: renewed for another second
        time.sleep(0.6)
        assert store.get(("t",), "short", refresh_ttl=False) is not None
        time.sleep(0.6)
        assert store.get(("t",), "short") is None  # expired, though not yet swept
        assert store.sweep_ttl() == 2  # both versions
        assert store.get(("t",), "long") is not None
        assert store.stop_ttl_sweeper()
        store.close()


async def test_a_version_swept_during_a_read_does_not_fail_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A read renews the item's TTL and aligns its older versions' expiry. Should
    # a sweeper (or a delete) remove an older version between the read's look at
    # the versions and that alignment, the read still returns the item.
    async with ContextForge.open() as cf:
        store = ContextForgeStore(cf, ttl={"default_ttl": 10, "refresh_on_read": True})
        await store.aput(("t",), "k", {"v": 1})
        await store.aput(("t",), "k", {"v": 2})
        scope = namespace_to_scope(("t",))
        seen = await cf.history("k", scope)
        assert len(seen) == 2
        assert await cf.delete(seen[0].id)

        async def as_seen_before(self: ContextForge, key: str, scope: str | None) -> Any:
            return seen  # the versions as the read saw them, before the delete

        monkeypatch.setattr(ContextForge, "history", as_seen_before)
        item = await store.aget(("t",), "k")
        assert item is not None and item.value == {"v": 2}
        monkeypatch.undo()
        [current] = await cf.history("k", scope)
        before = seen[1].expires_at
        assert before is not None and current.expires_at is not None
        assert current.expires_at > before  # renewed
        store.close()


def test_namespace_scope_escaping() -> None:
    assert namespace_to_scope(("team", "a/b", "50%")) == "langgraph/team/a%2Fb/50%25"
    assert scope_to_namespace("langgraph/team/a%2Fb/50%25") == ("team", "a/b", "50%")


# LangMem's memory tools, called directly -----------------------------------------------


def test_langmem_tools_use_the_store(sync_store: ContextForgeStore) -> None:
    langmem = pytest.importorskip("langmem")
    manage = langmem.create_manage_memory_tool(("memories", "ann"), store=sync_store)
    search = langmem.create_search_memory_tool(("memories", "ann"), store=sync_store)
    other = langmem.create_search_memory_tool(("memories", "bob"), store=sync_store)

    created = manage.invoke({"content": "Ann prefers window seats", "action": "create"})
    memory_id = created.rsplit(" ", 1)[-1]
    found = json.loads(search.invoke({"query": "window seats"}))
    assert [(m["key"], m["value"]) for m in found] == [
        (memory_id, {"content": "Ann prefers window seats"})
    ]
    assert found[0]["score"] is not None
    assert json.loads(other.invoke({"query": "window seats"})) == []

    manage.invoke({"content": "Ann prefers aisle seats", "action": "update", "id": memory_id})
    found = json.loads(search.invoke({"query": "seats"}))
    assert [m["value"]["content"] for m in found] == ["Ann prefers aisle seats"]
    manage.invoke({"action": "delete", "id": memory_id})
    assert json.loads(search.invoke({"query": "seats"})) == []


async def test_langmem_tools_async(store: ContextForgeStore) -> None:
    langmem = pytest.importorskip("langmem")
    manage = langmem.create_manage_memory_tool(("memories", "ann"), store=store)
    search = langmem.create_search_memory_tool(("memories", "ann"), store=store)
    await manage.ainvoke({"content": "Ann's dog is called Rex", "action": "create"})
    found = json.loads(await search.ainvoke({"query": "dog"}))
    assert [m["value"]["content"] for m in found] == ["Ann's dog is called Rex"]


# Isolation: nothing written under one namespace is read under another --------------------

_LABEL = st.text(alphabet="ab/%*_:é", min_size=1, max_size=4)
_NAMESPACE = st.lists(_LABEL, min_size=1, max_size=3).map(tuple)


def _under(ns: tuple[str, ...], prefix: tuple[str, ...], wildcard: bool) -> bool:
    return len(ns) >= len(prefix) and all(
        n == p or (wildcard and p == "*") for n, p in zip(ns, prefix)
    )


def test_namespaces_never_see_each_other() -> None:
    with ContextForgeSync.open() as cf:
        store = ContextForgeStore(cf.aio)
        runs = iter(range(10**6))

        @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(a=_NAMESPACE, b=_NAMESPACE, key=st.sampled_from(["k", "k/1", "%", "*"]))
        def check(a: tuple[str, ...], b: tuple[str, ...], key: str) -> None:
            root = (f"run{next(runs)}",)
            ns_a, ns_b = root + a, root + b
            store.put(ns_a, key, {"owner": list(a)})
            got = store.get(ns_b, key)
            assert (got is not None) == (a == b)
            found = store.search(ns_b)
            assert bool(found) == _under(ns_a, ns_b, wildcard=False)
            assert all(item.value == {"owner": list(a)} for item in found)
            listed = store.list_namespaces(prefix=ns_b)
            assert listed == ([ns_a] if _under(ns_a, ns_b, wildcard=True) else [])
            assert store.list_namespaces(prefix=root) == [ns_a]

        check()
        store.close()


def test_prefix_look_alikes() -> None:
    with ContextForgeSync.open() as cf:
        store = ContextForgeStore(cf.aio)
        store.put(("team", "ab"), "k", {"v": "ab"})
        store.put(("team", "a_b"), "k", {"v": "a_b"})
        store.put(("team", "a/b"), "k", {"v": "a/b"})
        assert store.search(("team", "a")) == []
        assert store.get(("team", "a"), "k") is None
        assert [i.value["v"] for i in store.search(("team", "a/b"))] == ["a/b"]
        assert store.list_namespaces(prefix=("team", "a")) == []
        store.close()


def test_keys_are_kept_exactly(sync_store: ContextForgeStore) -> None:
    keys = ["", "\u00e9", "e\u0301", "50%", "a\nb", "plain"]
    for i, key in enumerate(keys):
        sync_store.put(("k",), key, {"i": i})
    for i, key in enumerate(keys):
        item = sync_store.get(("k",), key)
        assert item is not None and item.key == key and item.value == {"i": i}
    assert sorted(i.key for i in sync_store.search(("k",), limit=20)) == sorted(keys)


async def test_the_store_never_touches_entries_saved_otherwise() -> None:
    """Items live under their own root scope: a native keyed fact in a scope
    named like a namespace is neither superseded nor deleted by a put or a
    delete of the same key, and list_namespaces lists only namespaces."""
    async with await ContextForge.open(":memory:") as cf:
        native = int(await cf.save("lives in Lisbon", scope="user:42", key="user.city"))
        await cf.save("a mem0 memory", scope="mem0/user:alice")
        store = ContextForgeStore(cf)
        await store.aput(("user:42",), "user.city", {"city": "Porto"})
        assert (await store.aget(("user:42",), "user.city")).value == {"city": "Porto"}  # type: ignore[union-attr]
        await store.adelete(("user:42",), "user.city")
        assert await store.aget(("user:42",), "user.city") is None
        kept = await cf.get(native)
        assert kept is not None and kept.current and kept.content == "lives in Lisbon"
        assert await store.alist_namespaces() == []
        await store.aput(("docs",), "a", {"t": 1})
        assert await store.alist_namespaces() == [("docs",)]
        assert [i.key for i in await store.asearch(())] == ["a"]
        store.close()
