"""contextforge.compat.mem0: mem0's Memory/AsyncMemory API over contextforge.

The adapter does not need mem0; only the signature check compares against the
real package (mem0ai 2.2.1) and is skipped without it."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from contextforge import ContextForge, ContextForgeSync
from contextforge.compat.mem0 import (
    AsyncMemory,
    Memory,
    UnsupportedFilterError,
    translate_filters,
)
from contextforge.distill import Distillation, Fact
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


@pytest.fixture
def store() -> Iterator[ContextForgeSync]:
    with ContextForgeSync.open() as cf:
        yield cf


@pytest.fixture
def m(store: ContextForgeSync) -> Memory:
    return Memory(store)


def ids(results: dict[str, Any]) -> list[str]:
    return [r["id"] for r in results["results"]]


def texts(results: dict[str, Any]) -> set[str]:
    return {r["memory"] for r in results["results"]}


# ------------------------------------------------------------ a mem0 script


def mem0_script(m: Any) -> None:
    """A script written against mem0 2.2.1's Memory; only the import differs."""
    messages = [
        {"role": "system", "content": "You are a travel assistant."},
        {"role": "user", "content": "I am vegetarian and I love hiking in the Alps"},
        {"role": "assistant", "content": "Noted, I will remember your diet."},
    ]
    added = m.add(messages, user_id="alice", metadata={"category": "profile"}, infer=False)
    assert [r["event"] for r in added["results"]] == ["ADD", "ADD"]  # no system message
    assert [r["role"] for r in added["results"]] == ["user", "assistant"]
    m.add("I prefer window seats", user_id="alice", agent_id="travel", infer=False)
    m.add("I am allergic to peanuts", user_id="bob", infer=False)

    found = m.search("hiking Alps", filters={"user_id": "alice"}, top_k=5)
    top = found["results"][0]
    assert top["memory"] == "I am vegetarian and I love hiking in the Alps"
    assert isinstance(top["score"], float) and top["score"] > 0
    assert top["user_id"] == "alice" and top["role"] == "user"
    assert top["metadata"] == {"category": "profile"}
    assert {"id", "memory", "hash", "created_at", "updated_at"} <= set(top)

    assert len(m.get_all(filters={"user_id": "alice"})["results"]) == 3
    assert texts(m.get_all(filters={"user_id": "alice", "agent_id": "travel"})) == {
        "I prefer window seats"
    }
    assert texts(m.get_all(filters={"user_id": "bob"})) == {"I am allergic to peanuts"}
    assert m.search("peanuts", filters={"user_id": "alice"})["results"] == []

    memory_id = top["id"]
    assert m.update(memory_id, text="I am vegan and I love hiking in the Dolomites") == {
        "message": "Memory updated successfully!"
    }
    current = m.get(memory_id)
    assert current is not None
    assert current["memory"] == "I am vegan and I love hiking in the Dolomites"
    assert current["created_at"] == top["created_at"]
    assert current["updated_at"] >= top["updated_at"] and current["hash"] != top["hash"]
    history = m.history(memory_id)
    assert [(h["event"], h["old_memory"], h["new_memory"]) for h in history] == [
        ("ADD", None, "I am vegetarian and I love hiking in the Alps"),
        (
            "UPDATE",
            "I am vegetarian and I love hiking in the Alps",
            "I am vegan and I love hiking in the Dolomites",
        ),
    ]
    assert all(h["memory_id"] == memory_id and h["is_deleted"] is False for h in history)
    assert texts(m.search("Dolomites", filters={"user_id": "alice"})) == {current["memory"]}
    assert m.search("vegetarian Alps", filters={"user_id": "alice"})["results"] == []

    assert m.delete(memory_id) == {"message": "Memory deleted successfully!"}
    assert m.get(memory_id) is None
    with pytest.raises(ValueError, match="not found"):
        m.delete(memory_id)

    assert m.delete_all(user_id="bob") == {"message": "Memories deleted successfully!"}
    assert m.get_all(filters={"user_id": "bob"})["results"] == []
    assert len(m.get_all(filters={"user_id": "alice"})["results"]) == 2
    m.reset()
    assert m.get_all(filters={"user_id": "alice"})["results"] == []


def test_a_mem0_script_runs_switched_by_one_import(m: Memory) -> None:
    mem0_script(m)


def test_item_shapes_match_mem0(m: Memory) -> None:
    [added] = m.add("likes jazz", user_id="u1", run_id="r1", infer=False)["results"]
    assert set(added) == {"id", "memory", "event", "actor_id", "role"}
    got = m.get(added["id"])
    assert got is not None
    assert list(got) == [
        "id",
        "memory",
        "hash",
        "metadata",
        "score",
        "created_at",
        "updated_at",
        "user_id",
        "run_id",
        "role",
    ]
    assert got["metadata"] is None and got["score"] is None
    assert got["created_at"] == got["updated_at"]
    assert [h["event"] for h in m.history(added["id"])] == ["ADD"]
    [listed] = m.get_all(filters={"user_id": "u1"})["results"]
    assert "score" not in listed and listed["id"] == added["id"]
    [hit] = m.search("jazz", filters={"run_id": "r1"}, explain=True)["results"]
    assert hit["score"] is not None and "bm25" in hit["score_details"]


def test_signatures_match_mem0_2_2(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setenv("MEM0_DIR", str(tmp_path))
    monkeypatch.setenv("MEM0_TELEMETRY", "False")
    mem0 = pytest.importorskip("mem0")
    memory_item = importlib.import_module("mem0.configs.base").MemoryItem

    for ours, theirs in ((Memory, mem0.Memory), (AsyncMemory, mem0.AsyncMemory)):
        for name in ("add", "get", "get_all", "search", "update", "delete", "delete_all"):
            a = inspect.signature(getattr(ours, name)).parameters
            b = inspect.signature(getattr(theirs, name)).parameters
            assert [(p.name, p.kind) for p in a.values()] == [
                (p.name, p.kind) for p in b.values()
            ], name
            for p in b.values():
                if p.name != "expiration_date" or name != "update":
                    assert a[p.name].default == p.default, (name, p.name)
        for name in ("history", "reset"):
            assert list(inspect.signature(getattr(ours, name)).parameters) == list(
                inspect.signature(getattr(theirs, name)).parameters
            )
            assert inspect.iscoroutinefunction(getattr(ours, name)) == (ours is AsyncMemory)
    item_keys = set(memory_item.model_fields)
    with ContextForgeSync.open() as cf:
        memory = Memory(cf)
        [added] = memory.add("x marks the spot", user_id="u", infer=False)["results"]
        got = memory.get(added["id"])
        assert got is not None and item_keys <= set(got)


# ------------------------------------------------------------ construction


async def test_built_from_an_async_store_or_store_kw() -> None:
    async with ContextForge.open() as cf:
        with Memory(cf) as blocking:  # a ContextForge is served through sharing()
            blocking.add("written through the blocking API", user_id="u", infer=False)
        aio = AsyncMemory(store=cf)
        assert texts(await aio.get_all(filters={"user_id": "u"})) == {
            "written through the blocking API"
        }
        assert not cf.closed  # closing the Memory stopped its twin, not the store
    with ContextForgeSync.open() as twin:
        assert (
            texts(await AsyncMemory(twin).get_all(filters={"user_id": "u"})) == set()
        )  # a ContextForgeSync gives its aio store
        Memory(store=twin).add("x", user_id="u", infer=False)
        assert twin.count() == 1
    with pytest.raises(TypeError, match="open contextforge store"):
        Memory({"vector_store": {}})  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        AsyncMemory()


# ------------------------------------------------------------ async + infer


async def city(text: str, /, *, keys: Sequence[str] = ()) -> Distillation:
    """A scripted model: where the user lives, under the key "user.city"."""
    line = [line for line in text.splitlines() if "live in" in line][-1]
    place = line.rsplit("live in", 1)[1].strip(" .")
    fact = Fact("state", f"Lives in {place}", key="user.city")
    return Distillation(summary="Where the user lives.", facts=(fact,), model="city")


async def test_async_infer_uses_the_distiller_and_updates_by_key() -> None:
    async with ContextForge.open() as cf:
        m = AsyncMemory(cf, distiller=city)
        first = await m.add("I live in Berlin", user_id="ann")
        [added] = first["results"]
        assert added["event"] == "ADD" and added["memory"] == "Lives in Berlin"
        second = await m.add([{"role": "user", "content": "I now live in Paris"}], user_id="ann")
        assert second["results"] == [
            {
                "id": added["id"],
                "memory": "Lives in Paris",
                "event": "UPDATE",
                "previous_memory": "Lives in Berlin",
            }
        ]
        assert texts(await m.get_all(filters={"user_id": "ann"})) == {"Lives in Paris"}
        assert [h["event"] for h in await m.history(added["id"])] == ["ADD", "UPDATE"]
        got = await m.get(added["id"])
        assert got is not None and got["user_id"] == "ann"
        # no summary entry is kept: mem0 stores facts only
        assert [h.kind async for h in cf.list(include_superseded=True)] == ["fact", "fact"]
        await m.update(added["id"], text="Lives in Lyon")
        assert [h["new_memory"] for h in await m.history(added["id"])] == [
            "Lives in Berlin",
            "Lives in Paris",
            "Lives in Lyon",
        ]
        assert await cf.keys("mem0/user:ann") == ["user.city"]
        await m.delete(added["id"])
        assert await m.history(added["id"]) == []
        assert await cf.count(include_superseded=True) == 0


def test_infer_with_the_offline_extractor(m: Memory, store: ContextForgeSync) -> None:
    result = m.add(
        [
            {"role": "user", "content": "I decided to use Postgres for the project."},
            {"role": "assistant", "content": "Great choice."},
        ],
        user_id="u",
        agent_id="a",
    )
    assert result["results"] and {r["event"] for r in result["results"]} == {"ADD"}
    assert all("Postgres" in r["memory"] for r in result["results"])
    listed = m.get_all(filters={"agent_id": "a"})["results"]
    assert {r["id"] for r in listed} == set(ids(result))
    assert all(r["user_id"] == "u" and r["agent_id"] == "a" for r in listed)
    assert {h.kind for h in store.list()} == {"fact"}
    assert m.add([{"role": "system", "content": "be nice"}], user_id="u") == {"results": []}


# ------------------------------------------------------------ arguments


def test_mem0_argument_rules(m: Memory) -> None:
    with pytest.raises(ValueError, match="At least one"):
        m.add("x", infer=False)
    with pytest.raises(ValueError, match="whitespace"):
        m.add("x", user_id="a b", infer=False)
    with pytest.raises(ValueError, match="filters=\\{'user_id'"):
        m.search("x", user_id="a")
    with pytest.raises(ValueError, match="Top-level entity"):
        m.get_all(agent_id="a")
    with pytest.raises(ValueError, match="at least one of: user_id"):
        m.search("x", filters={"category": "a"})
    with pytest.raises(ValueError, match="at least one of: user_id"):
        m.get_all()
    with pytest.raises(ValueError, match="empty"):
        m.search("  ", filters={"user_id": "a"})
    with pytest.raises(ValueError, match="threshold"):
        m.search("x", filters={"user_id": "a"}, threshold=2)
    with pytest.raises(ValueError, match="top_k"):
        m.get_all(filters={"user_id": "a"}, top_k=-1)
    with pytest.raises(ValueError, match="platform-only"):
        m.add("x", user_id="a", timestamp=1)
    with pytest.raises(ValueError, match="At least one of text"):
        m.update("nope")
    with pytest.raises(ValueError, match="not found"):
        m.update("nope", text="x")
    with pytest.raises(ValueError, match="reset"):
        m.delete_all()
    with pytest.raises(TypeError, match="messages"):
        m.add(42, user_id="a")  # type: ignore[arg-type]
    assert m.get("nope") is None and m.history("nope") == []
    assert m.get_all(filters={"user_id": "a"}, top_k=0) == {"results": []}
    # ids are coerced and trimmed as mem0 does
    m.add("numbered", user_id=42, infer=False)  # type: ignore[arg-type]
    assert texts(m.get_all(filters={"user_id": " 42 "})) == {"numbered"}


def test_identity_keys_in_metadata_cannot_move_a_memory(m: Memory) -> None:
    [added] = m.add(
        "secret plan", user_id="alice", metadata={"user_id": "mallory", "tag": 1}, infer=False
    )["results"]
    assert m.get_all(filters={"user_id": "mallory"})["results"] == []
    m.update(added["id"], metadata={"user_id": "mallory", "agent_id": "x", "tag": 2})
    [item] = m.get_all(filters={"user_id": "alice"})["results"]
    assert item["metadata"] == {"tag": 2} and "agent_id" not in item
    assert m.get_all(filters={"agent_id": "x"})["results"] == []


def test_expiration_date(m: Memory) -> None:
    today = datetime.now(timezone.utc).date()
    yesterday = (today - timedelta(days=2)).isoformat()
    [old] = m.add("expired note", user_id="u", expiration_date=yesterday, infer=False)["results"]
    m.add("fresh note", user_id="u", expiration_date=today + timedelta(days=2), infer=False)
    assert texts(m.get_all(filters={"user_id": "u"})) == {"fresh note"}
    assert texts(m.search("note", filters={"user_id": "u"})) == {"fresh note"}
    assert texts(m.get_all(filters={"user_id": "u"}, show_expired=True)) == {
        "expired note",
        "fresh note",
    }
    got = m.get(old["id"])
    assert got is not None and got["expiration_date"] == yesterday
    m.update(old["id"], expiration_date=None)
    assert len(m.get_all(filters={"user_id": "u"})["results"]) == 2
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        m.add("x", user_id="u", expiration_date="tomorrow")


# ------------------------------------------------------------ filters


@pytest.mark.parametrize(
    ("mem0_filter", "contextforge_filter"),
    [
        ({"user_id": "u"}, {"user_id": "u"}),
        ({"user_id": 7}, {"user_id": "7"}),
        ({"user_id": "u", "tier": "pro"}, {"user_id": "u", "tier": "pro"}),
        ({"user_id": "*"}, {"user_id": {"$exists": True}}),
        ({"n": {"eq": 1}}, {"n": {"$eq": 1}}),
        ({"n": {"ne": 1}}, {"n": {"$ne": 1}}),
        ({"n": {"gt": 1, "lte": 5}}, {"n": {"$gt": 1, "$lte": 5}}),
        ({"n": {"gte": 1}}, {"n": {"$gte": 1}}),
        ({"n": {"lt": 1}}, {"n": {"$lt": 1}}),
        ({"c": {"in": ["a", "b"]}}, {"c": {"$in": ["a", "b"]}}),
        ({"c": {"nin": ["a"]}}, {"c": {"$nin": ["a"]}}),
        ({"a.b": "x"}, {"a.b": "x"}),
        ({"AND": [{"a": 1}, {"b": {"gt": 2}}]}, {"a": 1, "b": {"$gt": 2}}),
        ({"a": 1, "AND": [{"a": {"lt": 5}}]}, {"a": 1, "$and": [{"a": {"$lt": 5}}]}),
        ({"OR": [{"a": 1}, {"b": "x"}]}, {"$or": [{"a": 1}, {"b": "x"}]}),
        (
            {"OR": [{"a": 1}], "AND": [{"OR": [{"b": 1}]}]},
            {"$or": [{"a": 1}], "$and": [{"$or": [{"b": 1}]}]},
        ),
        ({"NOT": [{"a": 1}]}, {"a": {"$ne": 1}}),
        ({"NOT": [{"a": {"ne": 1}}]}, {"a": {"$eq": 1}}),
        ({"NOT": [{"a": {"in": [1, 2]}}]}, {"a": {"$nin": [1, 2]}}),
        ({"NOT": [{"a": {"nin": [1]}}]}, {"a": {"$in": [1]}}),
        ({"NOT": [{"a": "*"}]}, {"a": {"$exists": False}}),
        ({"NOT": [{"a": 1}, {"b": 2}]}, {"a": {"$ne": 1}, "b": {"$ne": 2}}),
        ({"NOT": [{"a": 1, "b": 2}]}, {"$or": [{"a": {"$ne": 1}}, {"b": {"$ne": 2}}]}),
        ({"NOT": [{"OR": [{"a": 1}, {"b": 2}]}]}, {"a": {"$ne": 1}, "b": {"$ne": 2}}),
        ({"NOT": [{"NOT": [{"a": {"gt": 1}}]}]}, {"a": {"$gt": 1}}),
    ],
)
def test_filter_translation(
    mem0_filter: dict[str, Any], contextforge_filter: dict[str, Any]
) -> None:
    assert translate_filters(mem0_filter) == contextforge_filter


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"name": {"contains": "ann"}}, "substring"),
        ({"name": {"icontains": "ann"}}, "substring"),
        ({"n": {"between": [1, 2]}}, "unsupported filter operator 'between'"),
        ({"n": {"$gt": 1}}, "unsupported filter operator '\\$gt'"),
        ({"$or": [{"a": 1}]}, "no '\\$' keys"),
        ({"n": [1, 2]}, "use \\{'in'"),
        ({"n": {}}, "empty condition"),
        ({"NOT": [{"n": {"gt": 1}}]}, "NOT of 'n' 'gt'"),
        ({"OR": []}, "non-empty list"),
        ({"AND": {"a": 1}}, "non-empty list"),
        ({"OR": [{}]}, "non-empty filter objects"),
    ],
)
def test_untranslatable_filters_are_refused(m: Memory, bad: dict[str, Any], message: str) -> None:
    with pytest.raises(UnsupportedFilterError, match=message):
        translate_filters(bad)
    with pytest.raises(ValueError, match=message):  # an UnsupportedFilterError is a ValueError
        m.search("x", filters={"user_id": "u", **bad})


def test_filters_select_as_mem0_does(m: Memory) -> None:
    for n, (tier, city) in enumerate([("pro", "berlin"), ("free", "paris"), ("pro", "rome")]):
        m.add(
            f"order {n} shipped",
            user_id="u",
            metadata={"n": n, "tier": tier, "city": city},
            infer=False,
        )
    m.add("order 9 shipped", user_id="other", metadata={"n": 9, "tier": "pro"}, infer=False)

    def sel(**extra: Any) -> set[int]:
        found = m.search("order shipped", filters={"user_id": "u", **extra}, top_k=10)
        listed = m.get_all(filters={"user_id": "u", **extra}, top_k=10)
        assert texts(found) == texts(listed)
        return {r["metadata"]["n"] for r in listed["results"]}

    assert sel() == {0, 1, 2}
    assert sel(tier="pro") == {0, 2}
    assert sel(n={"gte": 1}) == {1, 2}
    assert sel(city={"in": ["paris", "rome"]}, n={"lt": 2}) == {1}
    assert sel(OR=[{"tier": "free"}, {"city": "rome"}]) == {1, 2}
    assert sel(NOT=[{"tier": "pro"}]) == {1}
    assert sel(AND=[{"n": {"gt": 0}}, {"tier": {"ne": "free"}}]) == {2}
    assert sel(city="*") == {0, 1, 2}
    assert sel(missing="*") == set()


# ------------------------------------------------------------ isolation

ID = st.sampled_from(["a", "b", "a/b", "a%2Fb", "%", "b/", "a:b"])
TRIPLE = st.tuples(st.none() | ID, st.none() | ID, st.none() | ID).filter(
    lambda t: any(v is not None for v in t)
)
NAMES = ("user_id", "agent_id", "run_id")


def entity_kwargs(triple: tuple[str | None, ...]) -> dict[str, Any]:
    return {name: v for name, v in zip(NAMES, triple, strict=True) if v is not None}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(memories=st.lists(TRIPLE, min_size=1, max_size=8), probes=st.lists(TRIPLE, max_size=4))
def test_user_agent_run_partition_exactly_as_mem0(
    memories: list[tuple[str | None, ...]], probes: list[tuple[str | None, ...]]
) -> None:
    with ContextForgeSync.open() as cf:
        m = Memory(cf)
        owner: dict[str, dict[str, Any]] = {}
        for n, triple in enumerate(memories):
            kwargs = entity_kwargs(triple)
            [added] = m.add(f"memo {n} shared", infer=False, **kwargs)["results"]
            owner[added["id"]] = kwargs

        def expected(selection: dict[str, Any]) -> set[str]:
            # mem0: a filter on ids is an equality on each id given
            return {
                i for i, kw in owner.items() if all(kw.get(k) == v for k, v in selection.items())
            }

        for triple in [*memories, *probes]:
            selection = entity_kwargs(triple)
            want = expected(selection)
            assert set(ids(m.get_all(filters=selection, top_k=100))) == want
            assert set(ids(m.search("shared memo", filters=selection, top_k=100))) == want
            for memory_id in want:
                item = m.get(memory_id)
                assert item is not None
                assert {k: item[k] for k in NAMES if k in item} == owner[memory_id]
        if probes:
            selection = entity_kwargs(probes[0])
            gone = expected(selection)
            m.delete_all(**selection)
            for memory_id, kwargs in owner.items():
                assert (m.get(memory_id) is None) == (memory_id in gone)


def test_namespaces_and_reset_leave_other_entries_alone(store: ContextForgeSync) -> None:
    store.save("not a mem0 memory", scope="mem0x/user:u", metadata={"user_id": "u"})
    store.save("a global note")
    one, two = Memory(store), Memory(store, namespace="app/two")
    one.add("in one", user_id="u", infer=False)
    two.add("in two", user_id="u", infer=False)
    assert texts(one.get_all(filters={"user_id": "u"})) == {"in one"}
    assert texts(two.get_all(filters={"user_id": "u"})) == {"in two"}
    one.reset()
    assert one.get_all(filters={"user_id": "u"})["results"] == []
    assert texts(two.get_all(filters={"user_id": "u"})) == {"in two"}
    assert store.count() == 3


def test_the_hash_is_of_the_stored_text_never_of_a_scrubbed_secret(m: Memory) -> None:
    import hashlib

    secret = "sk-proj-" + "Zq8vX2mN4bT7wR1yK6pL9sD3fG5hJ0cA"
    added = m.add(f"my api key is {secret}", user_id="alice", infer=False)
    [item] = m.get_all(filters={"user_id": "alice"})["results"]
    assert item["id"] == added["results"][0]["id"]
    assert secret not in item["memory"]
    assert item["hash"] == hashlib.md5(item["memory"].encode()).hexdigest()
    assert item["hash"] != hashlib.md5(f"my api key is {secret}".encode()).hexdigest()
