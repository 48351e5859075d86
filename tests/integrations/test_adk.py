"""ContextForgeMemoryService through Google ADK's own call paths (offline, no LLM)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from datetime import datetime, timedelta, timezone

import pytest

pytest.importorskip("google.adk.memory")

from contextforge import ContextForge, ContextForgeSync
from contextforge.integrations.adk import ContextForgeMemoryService, escape_label
from google.adk.agents import BaseAgent
from google.adk.agents.context import Context
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events import Event
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService, Session
from google.genai import types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def content(text: str, role: str = "user") -> types.Content:
    return types.Content(role=role, parts=[types.Part(text=text)])


def texts(memories: list[MemoryEntry]) -> list[str]:
    return [part.text or "" for m in memories for part in (m.content.parts or [])]


class Recall(BaseAgent):
    """A model-free agent: answers with what memory search finds for the user's words."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        parts = ctx.user_content.parts if ctx.user_content else None
        question = (parts[0].text if parts else None) or ""
        found = await Context(ctx).search_memory(question)
        answer = "recalled: " + " | ".join(texts(found.memories))
        yield Event(
            author=self.name, invocation_id=ctx.invocation_id, content=content(answer, "model")
        )


async def save_session(callback_context: Context) -> None:
    await callback_context.add_session_to_memory()


async def ask(runner: Runner, user_id: str, session_id: str, text: str) -> str:
    answers = []
    async for event in runner.run_async(
        user_id=user_id, session_id=session_id, new_message=content(text)
    ):
        if event.content and event.content.parts and event.author == "recall":
            answers.append(event.content.parts[0].text or "")
    return "\n".join(answers)


async def test_runner_remembers_across_sessions_per_user(mem: ContextForge) -> None:
    sessions = InMemorySessionService()
    runner = Runner(
        app_name="shop",
        agent=Recall(name="recall", after_agent_callback=save_session),
        session_service=sessions,
        memory_service=ContextForgeMemoryService(mem),
    )
    try:
        for user, session in [("ann", "a1"), ("ann", "a2"), ("bob", "b1")]:
            await sessions.create_session(app_name="shop", user_id=user, session_id=session)
        await ask(runner, "ann", "a1", "I like green tea")
        assert "green tea" in await ask(runner, "ann", "a2", "which tea do I like")
        assert "green tea" not in await ask(runner, "bob", "b1", "which tea do I like")
    finally:
        await runner.close()
    assert set(await mem.scopes()) == {"adk:shop/ann", "adk:shop/bob"}


async def add_events(sessions: InMemorySessionService, session: Session, *lines: str) -> Session:
    for n, line in enumerate(lines):
        role = "user" if n % 2 == 0 else "model"
        author = "user" if role == "user" else "agent"
        await sessions.append_event(
            session, Event(author=author, invocation_id="inv", content=content(line, role))
        )
    fresh = await sessions.get_session(
        app_name=session.app_name, user_id=session.user_id, session_id=session.id
    )
    assert fresh is not None
    return fresh


async def test_adding_a_session_again_adds_only_new_events(mem: ContextForge) -> None:
    service = ContextForgeMemoryService(store=mem)
    sessions = InMemorySessionService()
    session = await sessions.create_session(app_name="app", user_id="u1", session_id="s1")
    session = await add_events(sessions, session, "my dog is called Rex", "Rex is a good name")
    await service.add_session_to_memory(session)
    await service.add_session_to_memory(session)
    assert await mem.count() == 2
    session = await add_events(sessions, session, "Rex likes the beach")
    await service.add_session_to_memory(session)
    assert await mem.count() == 3

    found = await service.search_memory(app_name="app", user_id="u1", query="Rex beach")
    assert "Rex likes the beach" in texts(found.memories)
    entry = next(m for m in found.memories if texts([m]) == ["Rex likes the beach"])
    assert entry.id == session.events[-1].id
    assert entry.author == "user" and entry.content.role == "user"
    assert entry.timestamp is not None
    assert datetime.fromisoformat(entry.timestamp).timestamp() == pytest.approx(
        session.events[-1].timestamp
    )
    hits = [h async for h in mem.list(scope="adk:app/u1")]
    assert {h.session_id for h in hits} == {"s1"} and {h.kind for h in hits} == {"message"}

    newest = await service.search_memory(app_name="app", user_id="u1", query="")
    assert texts(newest.memories)[0] == "Rex likes the beach"


async def test_events_without_text_are_skipped(mem: ContextForge) -> None:
    service = ContextForgeMemoryService(mem)
    call = types.Part(function_call=types.FunctionCall(name="f", args={}))
    events = [
        Event(author="agent", invocation_id="i"),
        Event(author="agent", invocation_id="i", content=types.Content(role="model", parts=[call])),
    ]
    await service.add_events_to_memory(app_name="app", user_id="u", events=events)
    assert await mem.count() == 0


async def test_add_events_is_a_delta_with_metadata_and_ttl(mem: ContextForge) -> None:
    service = ContextForgeMemoryService(mem)
    first = Event(author="user", invocation_id="i", content=content("parcel arrives Monday"))
    await service.add_events_to_memory(
        app_name="app",
        user_id="u",
        events=[first],
        session_id="s9",
        custom_metadata={"source": "email", "ttl": 3600},
    )
    second = Event(author="user", invocation_id="i", content=content("parcel tracking number ok"))
    await service.add_events_to_memory(app_name="app", user_id="u", events=[second, first])
    assert await mem.count() == 2

    found = await service.search_memory(app_name="app", user_id="u", query="parcel Monday")
    entry = next(m for m in found.memories if m.id == first.id)
    assert entry.custom_metadata == {"source": "email"}
    [hit] = [h async for h in mem.list(scope="adk:app/u", session_id="s9")]
    assert hit.expires_at is not None
    assert hit.expires_at - datetime.now(timezone.utc) <= timedelta(hours=1)

    with pytest.raises(TypeError):
        await service.add_events_to_memory(
            app_name="app", user_id="u", events=[second], custom_metadata={"ttl": "soon"}
        )


async def test_add_memory_upserts_by_id(mem: ContextForge) -> None:
    service = ContextForgeMemoryService(mem)
    when = "2024-05-01T10:00:00+00:00"
    await service.add_memory(
        app_name="app",
        user_id="u",
        memories=[
            MemoryEntry(id="city", content=content("lives in Berlin"), author="u", timestamp=when),
            MemoryEntry(content=content("prefers short answers"), custom_metadata={"k": 1}),
        ],
    )
    later = "2024-06-01T10:00:00+00:00"
    await service.add_memory(
        app_name="app",
        user_id="u",
        memories=[MemoryEntry(id="city", content=content("lives in Paris"), timestamp=later)],
    )
    found = await service.search_memory(app_name="app", user_id="u", query="lives in")
    assert "lives in Paris" in texts(found.memories)
    assert "lives in Berlin" not in texts(found.memories)
    versions = await mem.history("adk:city", "adk:app/u")
    assert [v.content for v in versions] == ["lives in Berlin", "lives in Paris"]
    assert versions[0].timestamp == datetime(2024, 5, 1, 10, tzinfo=timezone.utc)

    short = await service.search_memory(app_name="app", user_id="u", query="short answers")
    [entry] = short.memories
    assert entry.id and entry.custom_metadata == {"k": 1}
    assert {h.kind async for h in mem.list(scope="adk:app/u")} == {"memory"}


async def test_delete_memory_forgets_and_stays_deleted(mem: ContextForge) -> None:
    service = ContextForgeMemoryService(mem)
    sessions = InMemorySessionService()
    session = await sessions.create_session(app_name="app", user_id="u", session_id="s")
    session = await add_events(sessions, session, "my pin hint is blue whale", "noted")
    await service.add_session_to_memory(session)
    found = await service.search_memory(app_name="app", user_id="u", query="blue whale")
    target = next(m for m in found.memories if texts([m]) == ["my pin hint is blue whale"])
    assert target.id is not None

    await service.delete_memory(app_name="app", user_id="other", memory_id=target.id)
    assert "my pin hint is blue whale" in texts(
        (await service.search_memory(app_name="app", user_id="u", query="blue whale")).memories
    )  # another user's delete touches nothing here

    await service.delete_memory(app_name="app", user_id="u", memory_id=target.id)
    await service.delete_memory(app_name="app", user_id="u", memory_id=None)
    await service.add_session_to_memory(session)  # added again: stays deleted
    again = await service.search_memory(app_name="app", user_id="u", query="blue whale")
    assert "my pin hint is blue whale" not in texts(again.memories)
    assert "whale" not in " ".join(texts(again.memories))


def test_escape_label_and_scopes() -> None:
    assert escape_label("a/b%c") == "a%2Fb%25c"
    assert escape_label("x\ny") == "x%0Ay"
    service = ContextForgeMemoryService.__new__(ContextForgeMemoryService)
    service.scope_root = "adk"
    assert service.scope("app", "u/1") == "adk:app/u%2F1"
    assert service.scope("a/b", "c") != service.scope("a", "b/c")


async def test_constructor_arguments(mem: ContextForge) -> None:
    twin = ContextForgeSync.sharing(mem)
    try:
        assert ContextForgeMemoryService(twin).store is mem
    finally:
        twin.close()
    with pytest.raises(TypeError):
        ContextForgeMemoryService(mem, store=mem)
    with pytest.raises(TypeError):
        ContextForgeMemoryService()
    with pytest.raises(TypeError):
        ContextForgeMemoryService("memory.db")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        ContextForgeMemoryService(mem, scope_root="a/b")
    # root "adk:x" with app "y" would be root "adk" with app "x:y": refused
    with pytest.raises(ValueError, match="':'"):
        ContextForgeMemoryService(mem, scope_root="adk:x")


LOOK_ALIKES = [
    ("a", "b"),
    ("a", "b/c"),
    ("a/b", "c"),
    ("a", "b%2Fc"),
    ("a%2Fb", "c"),
    ("a", "bc"),
    ("ab", "c"),
    ("a", ""),
    ("", "a"),
    ("a:b", "c"),
    ("a", "b/"),
]
label = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=6)
pairs = st.lists(
    st.one_of(st.sampled_from(LOOK_ALIKES), st.tuples(label, label)),
    min_size=2,
    max_size=5,
    unique=True,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(owners=pairs)
def test_apps_and_users_never_see_each_other(owners: list[tuple[str, str]]) -> None:
    async def run() -> None:
        async with ContextForge.open() as cf:
            service = ContextForgeMemoryService(cf)
            for n, (app, user) in enumerate(owners):
                event = Event(author="user", invocation_id="i", content=content(f"token zq{n}x"))
                session = Session(id=f"s{n}", app_name=app, user_id=user, events=[event])
                await service.add_session_to_memory(session)
            everything = " ".join(f"zq{n}x" for n in range(len(owners))) + " token"
            for n, (app, user) in enumerate(owners):
                for query in (everything, ""):
                    found = await service.search_memory(app_name=app, user_id=user, query=query)
                    assert texts(found.memories) == [f"token zq{n}x"], (owners, n, query)
            assert len(await cf.scopes()) == len(owners)

    asyncio.run(run())
