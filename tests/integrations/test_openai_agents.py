"""contextforge.integrations.openai_agents: the Agents SDK's Session protocol
over a contextforge store, driven through the real ``Runner`` with a scripted
model (no network, no LLM)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from datetime import datetime, timedelta, timezone
from typing import Any, cast

import pytest

pytest.importorskip("agents")

from agents import (
    Agent,
    Model,
    ModelResponse,
    ModelSettings,
    ModelTracing,
    RunConfig,
    Runner,
    Tool,
    Usage,
    function_tool,
    set_tracing_disabled,
)
from agents.agent_output import AgentOutputSchemaBase
from agents.handoffs import Handoff
from agents.items import TResponseInputItem, TResponseOutputItem, TResponseStreamEvent
from agents.memory import Session, SessionSettings
from contextforge import ContextForge, ContextForgeSync
from contextforge.integrations.openai_agents import (
    ContextForgeSession,
    item_text,
    recall_instructions,
    session_scope,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)
from openai.types.responses.response_prompt_param import ResponsePromptParam

set_tracing_disabled(True)


def _message(text: str, n: int) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id=f"msg_{n}",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


class ScriptedModel(Model):
    """Returns the scripted outputs in turn and records every input it is given."""

    def __init__(self, script: list[list[TResponseOutputItem]]) -> None:
        self.script = list(script)
        self.inputs: list[list[TResponseInputItem]] = []

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> ModelResponse:
        given_items: list[TResponseInputItem] = (
            [cast(TResponseInputItem, {"role": "user", "content": input})]
            if isinstance(input, str)
            else json.loads(json.dumps(input))
        )
        self.inputs.append(given_items)
        return ModelResponse(output=self.script.pop(0), usage=Usage(), response_id=None)

    def stream_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError


@pytest.fixture
async def cf() -> AsyncIterator[ContextForge]:
    async with ContextForge.open() as store:
        yield store


def _items(*texts: str) -> list[TResponseInputItem]:
    return [cast(TResponseInputItem, {"role": "user", "content": t}) for t in texts]


# -- through the Runner -------------------------------------------------------------


async def test_second_turn_sees_first_turn_from_the_session(cf: ContextForge) -> None:
    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    call = ResponseFunctionToolCall(
        type="function_call",
        id="fc_1",
        call_id="call_1",
        name="get_weather",
        arguments='{"city": "Paris"}',
        status="completed",
    )
    model = ScriptedModel(
        [[call], [_message("It is sunny in Paris.", 1)], [_message("You asked about Paris.", 2)]]
    )
    agent = Agent(name="assistant", instructions="Be brief.", model=model, tools=[get_weather])
    session = ContextForgeSession("chat-1", cf)

    first = await Runner.run(agent, "What is the weather in Paris?", session=session)
    assert first.final_output == "It is sunny in Paris."
    turn_one = await session.get_items()
    assert [item.get("type") for item in turn_one] == [
        None,
        "function_call",
        "function_call_output",
        "message",
    ]
    assert turn_one[0] == {"content": "What is the weather in Paris?", "role": "user"}
    assert cast(dict[str, Any], turn_one[1])["call_id"] == "call_1"
    assert cast(dict[str, Any], turn_one[2])["output"] == "sunny in Paris"

    second = await Runner.run(agent, "Which city did I ask about?", session=session)
    assert second.final_output == "You asked about Paris."
    # The second turn's model input is the first turn's items, from the store, then the
    # new question.
    assert model.inputs[-1] == [
        *turn_one,
        {"content": "Which city did I ask about?", "role": "user"},
    ]
    assert len(await session.get_items()) == 6

    # What was said is searchable memory: the tool output and the answer.
    hits = await cf.query("sunny Paris", session.scope, 512)
    assert {h.content for h in hits} >= {"sunny in Paris", "It is sunny in Paris."}
    assert all(h.session_id == "chat-1" for h in hits)


async def test_runner_honours_session_settings_limit(cf: ContextForge) -> None:
    model = ScriptedModel([[_message(f"answer {n}", n)] for n in range(3)])
    agent = Agent(name="a", model=model)
    session = ContextForgeSession("limited", store=cf, session_settings=SessionSettings(limit=2))
    for n in range(3):
        await Runner.run(agent, f"question {n}", session=session)
    # Turn 3 saw only the 2 latest stored items, then its own question.
    assert model.inputs[2] == [
        {"content": "question 1", "role": "user"},
        json.loads(json.dumps(_message("answer 1", 1).model_dump(exclude_unset=True))),
        {"content": "question 2", "role": "user"},
    ]
    assert len(await session.get_items()) == 2
    assert len(await session.get_items(limit=-1)) == 6
    # RunConfig's settings override the session's.
    model.script.append([_message("answer 3", 3)])
    await Runner.run(
        agent,
        "question 3",
        session=session,
        run_config=RunConfig(session_settings=SessionSettings(limit=1)),
    )
    assert model.inputs[3] == [
        json.loads(json.dumps(_message("answer 2", 2).model_dump(exclude_unset=True))),
        {"content": "question 3", "role": "user"},
    ]


# -- the protocol ---------------------------------------------------------------------


async def test_is_a_session(cf: ContextForge) -> None:
    session = ContextForgeSession("s", cf)
    assert isinstance(session, Session)
    assert session.session_id == "s"
    assert session.session_settings == SessionSettings()  # as the SDK's sessions
    assert session.scope == "agents:s"
    assert session.store is cf
    assert ContextForgeSession(
        "s", cf, session_settings={"limit": 3}
    ).session_settings == SessionSettings(limit=3)


async def test_store_given_once(cf: ContextForge) -> None:
    with pytest.raises(TypeError):
        ContextForgeSession("s")
    with pytest.raises(TypeError):
        ContextForgeSession("s", cf, store=cf)
    with pytest.raises(TypeError):
        ContextForgeSession("s", cast(Any, "memory.db"))
    with pytest.raises(ValueError):
        ContextForgeSession("", cf)


async def test_get_add_pop_clear(cf: ContextForge) -> None:
    session = ContextForgeSession("s", cf)
    assert await session.get_items() == []
    assert await session.pop_item() is None
    await session.add_items([])
    await session.add_items(_items("one", "two"))
    await session.add_items(_items("three"))
    await session.add_items(_items("three"))  # identical items are all kept
    assert await session.get_items() == _items("one", "two", "three", "three")
    assert await session.get_items(limit=2) == _items("three", "three")
    assert await session.get_items(limit=10) == _items("one", "two", "three", "three")
    assert await session.get_items(limit=0) == []
    assert await session.pop_item() == {"role": "user", "content": "three"}
    assert await session.pop_item() == {"role": "user", "content": "three"}
    assert await session.get_items() == _items("one", "two")
    await session.clear_session()
    assert await session.get_items() == []
    assert await cf.count(scope="agents:s") == 0


async def test_order_is_insertion_order_across_many_adds(cf: ContextForge) -> None:
    session = ContextForgeSession("s", cf)
    texts = [f"turn {n}" for n in range(40)]
    for text in texts:
        await session.add_items(_items(text))
    assert await session.get_items() == _items(*texts)
    assert await session.get_items(limit=3) == _items(*texts[-3:])
    assert [await session.pop_item() for _ in range(3)] == _items(*reversed(texts[-3:]))


async def test_order_survives_a_clock_that_stepped_back(cf: ContextForge) -> None:
    session = ContextForgeSession("s", cf)
    # An item saved while the clock ran an hour ahead (as add_items would store it).
    ahead = datetime.now(timezone.utc) + timedelta(hours=1)
    await cf.save(
        "from the future",
        "message",
        scope=session.scope,
        session_id="s",
        metadata={"item": {"role": "user", "content": "from the future"}, "role": "user"},
        timestamp=ahead,
        dedupe=False,
    )
    await session.add_items(_items("now", "and then"))
    assert await session.get_items() == _items("from the future", "now", "and then")
    assert await session.get_items(limit=1) == _items("and then")
    assert await session.pop_item() == {"role": "user", "content": "and then"}
    assert await session.pop_item() == {"role": "user", "content": "now"}


async def test_items_round_trip_exactly(cf: ContextForge) -> None:
    items: list[dict[str, Any]] = [
        {"role": "system", "content": "You are terse."},
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "What is in this picture?"},
                {
                    "type": "input_image",
                    "image_url": "https://example.com/cat.png",
                    "detail": "auto",
                },
            ],
        },
        {
            "id": "rs_1",
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "Looking at the cat."}],
            "encrypted_content": "gAAAAABoqPv4Xz8kLmN0pQrStUvWxYz1234567890abcdef",
        },
        {
            "type": "function_call",
            "id": "fc_68a1f0c2b3d48190",
            "call_id": "call_Xk9vQ2LmN8pR4sT6uW1yZ3aB",
            "name": "lookup",
            "arguments": '{"q": "cat", "n": 3}',
            "status": "completed",
        },
        {
            "type": "function_call_output",
            "call_id": "call_Xk9vQ2LmN8pR4sT6uW1yZ3aB",
            "output": "a cat",
        },
        {
            "type": "computer_call",
            "id": "cc_1",
            "call_id": "c1",
            "action": {"type": "click", "x": 1, "y": 2.5},
        },
        {"role": "user", "content": ""},
        {
            "role": "user",
            "content": "ünïcödé ✓ and numbers",
            "extra": [1, 1.0, None, True, {"k": 12345678901234567890}],
        },
    ]
    session = ContextForgeSession("s", cf)
    await session.add_items(cast(list[TResponseInputItem], items))
    assert await session.get_items() == items
    stored = [h async for h in cf.list(scope=session.scope)]
    assert sorted(h.content for h in stored) == sorted(
        [
            "You are terse.",
            "What is in this picture?",
            "Looking at the cat.",
            'lookup({"q": "cat", "n": 3})',
            "a cat",
            "[computer_call]",
            "[item]",
            "ünïcödé ✓ and numbers",
        ]
    )
    assert {h.kind for h in stored} == {"message"}
    assert {h.session_id for h in stored} == {"s"}


def test_item_text() -> None:
    assert (
        item_text({"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]}) == "no"
    )
    assert (
        item_text(
            {
                "type": "function_call_output",
                "call_id": "c",
                "output": [{"type": "input_text", "text": "x"}],
            }
        )
        == "x"
    )
    assert item_text({"type": "image_generation_call", "id": "i"}) == "[image_generation_call]"


async def test_secrets_are_scrubbed_by_default(cf: ContextForge) -> None:
    secret = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"
    said = _items(f"my key is {secret}")
    session = ContextForgeSession("s", cf)
    await session.add_items(said)
    [back] = await session.get_items()
    assert secret not in json.dumps(back)
    assert back == {"role": "user", "content": "my key is [REDACTED:openai_api_key]"}
    raw = ContextForgeSession("raw", cf, scrub=False)
    await raw.add_items(said)
    assert await raw.get_items() == said


async def test_parent_scope_and_recall(cf: ContextForge) -> None:
    monday = ContextForgeSession("mon", cf, parent_scope="user:42")
    tuesday = ContextForgeSession("tue", cf, parent_scope="user:42")
    other = ContextForgeSession("x", cf, parent_scope="user:7")
    assert monday.scope == "user:42/agents:mon"
    await monday.add_items(_items("I moved to Lisbon last spring."))
    await tuesday.add_items(_items("Book me a table for Friday."))
    await other.add_items(_items("I live in Lisbon too."))
    text = await recall_instructions(
        cf, "where do I live Lisbon", scope_prefix="user:42", instructions="Be helpful."
    )
    assert text.startswith("Be helpful.\n\n")
    assert "I moved to Lisbon last spring." in text
    assert "I live in Lisbon too." not in text
    single = await recall_instructions(cf, "Lisbon", monday.scope, budget=256)
    assert "I moved to Lisbon" in single
    assert await recall_instructions(cf, "Lisbon", "user:99", instructions="x") == "x"
    with pytest.raises(TypeError):
        ContextForgeSession("y", cf, scope="a", parent_scope="b")


async def test_scope_escapes_slashes(cf: ContextForge) -> None:
    assert session_scope("a/b") == "agents:a%2Fb"
    assert session_scope("a%2Fb") == "agents:a%252Fb"
    assert session_scope("s", "org:1/") == "org:1/agents:s"
    slash, lookalike = ContextForgeSession("a/b", cf), ContextForgeSession("a%2Fb", cf)
    await slash.add_items(_items("slash"))
    await lookalike.add_items(_items("lookalike"))
    assert await slash.get_items() == _items("slash")
    assert await lookalike.get_items() == _items("lookalike")
    assert await cf.scopes(prefix="agents:a") == {}  # one level each, nothing beneath


def test_sync_store_and_its_own_loop() -> None:
    with ContextForgeSync.open() as store:
        session = ContextForgeSession("s", store)
        asyncio.run(session.add_items(_items("from one loop")))
        assert asyncio.run(session.get_items()) == _items("from one loop")
        assert [h.content for h in store.list(scope="agents:s")] == ["from one loop"]


# -- isolation -------------------------------------------------------------------------

_ids = st.text(alphabet="ab/%:-_.é1", min_size=1, max_size=12)
_texts = st.lists(st.text(alphabet="xyz ", min_size=1, max_size=8), max_size=5)


@pytest.fixture(scope="module")
def shared_store() -> Iterator[ContextForgeSync]:
    with ContextForgeSync.open() as store:
        yield store


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    first=_ids,
    second=_ids,
    a=_texts,
    b=_texts,
    shared=st.booleans(),
    ops=st.lists(st.integers(0, 3), max_size=6),
)
def test_sessions_never_see_each_other(
    shared_store: ContextForgeSync,
    first: str,
    second: str,
    a: list[str],
    b: list[str],
    shared: bool,
    ops: list[int],
) -> None:
    if first == second:
        return
    # Two sessions in their own scopes, or both in one explicit scope: either way,
    # nothing written through one is read, popped or cleared through the other.
    scope = "agents:shared" if shared else None
    one = ContextForgeSession(first, shared_store, scope=scope)
    two = ContextForgeSession(second, shared_store, scope=scope)

    async def run() -> None:
        await one.clear_session()
        await two.clear_session()
        expect_one, expect_two = _items(*a), _items(*b)
        await one.add_items(expect_one)
        await two.add_items(expect_two)
        for op in ops:
            if op == 0:
                await one.add_items(_items("more"))
                expect_one = [*expect_one, *_items("more")]
            elif op == 1:
                popped = await one.pop_item()
                assert popped == (expect_one[-1] if expect_one else None)
                expect_one = expect_one[:-1]
            elif op == 2:
                await one.clear_session()
                expect_one = []
            else:
                assert await one.get_items(limit=2) == expect_one[-2:]
            assert await one.get_items() == expect_one
            assert await two.get_items() == expect_two
        assert await two.get_items() == expect_two

    asyncio.run(run())
