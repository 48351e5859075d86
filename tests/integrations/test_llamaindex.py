"""ContextForgeMemoryBlock through LlamaIndex's own ``Memory`` (offline, no LLM)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest

pytest.importorskip("llama_index.core.memory")

import pytest_asyncio
from contextforge import Config, ContextForge, ContextForgeSync
from contextforge.integrations.llamaindex import ContextForgeMemoryBlock
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import Memory
from llama_index.core.utils import get_tokenizer
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine


def words(text: str) -> list[str]:
    return text.split()


@pytest_asyncio.fixture
async def engine() -> AsyncIterator[AsyncEngine]:
    # Memory's short-term queue; disposed here so no aiosqlite connection leaks.
    eng = create_async_engine("sqlite+aiosqlite:///:memory:")
    yield eng
    await eng.dispose()


MakeMemory = Callable[..., Memory]


@pytest.fixture
def make_memory(engine: AsyncEngine) -> MakeMemory:
    def make(block: ContextForgeMemoryBlock, session_id: str, **kw: object) -> Memory:
        args: dict[str, object] = {
            "token_limit": 40,
            "chat_history_token_ratio": 0.5,
            "token_flush_size": 10,
            "tokenizer_fn": words,
        }
        args.update(kw)
        return Memory.from_defaults(
            session_id=session_id,
            memory_blocks=[block],
            async_engine=engine,
            table_name=f"t_{session_id}",
            **args,  # type: ignore[arg-type]
        )

    return make


TURNS = [
    ("user", "I have a peanut allergy, please remember it"),
    ("assistant", "Understood, no peanuts in any recipe."),
    ("user", "My cat is called Miso"),
    ("assistant", "Miso is a lovely name."),
    ("user", "I live in Berlin near the river"),
    ("assistant", "Berlin is great in summer."),
]


async def chat(memory: Memory, turns: list[tuple[str, str]]) -> None:
    for role, text in turns:
        await memory.aput(ChatMessage(role=role, content=text))


async def test_ejected_messages_are_saved_one_entry_each(
    mem: ContextForge, make_memory: MakeMemory
) -> None:
    block = ContextForgeMemoryBlock(mem, scope="user:ann")
    await chat(make_memory(block, "s1"), TURNS)
    saved = [h async for h in mem.list(scope="user:ann")]
    assert saved, "Memory flushed nothing into the block"
    assert [h.content for h in reversed(saved)] == [t for _, t in TURNS[: len(saved)]]
    assert [h.metadata["role"] for h in reversed(saved)] == [r for r, _ in TURNS[: len(saved)]]
    assert {h.session_id for h in saved} == {"s1"}
    assert {h.kind for h in saved} == {"message"}
    assert await mem.count() == len(saved)  # nothing outside the block's scope


async def test_memory_aget_puts_relevant_memory_in_the_system_message(
    mem: ContextForge, make_memory: MakeMemory
) -> None:
    block = ContextForgeMemoryBlock(store=mem, scope="user:ann", token_budget=300)
    await chat(make_memory(block, "s1"), TURNS)

    later = make_memory(block, "s2")  # a new conversation, same user
    messages = await later.aget(input="any peanut allergy to know about?")
    assert messages[0].role == "system"
    system = messages[0].content or ""
    assert "peanut allergy" in system
    assert "Untrusted memory" in system
    assert "Berlin" not in system  # not flushed yet, and not relevant


async def test_empty_history_lists_the_newest_entries(mem: ContextForge) -> None:
    block = ContextForgeMemoryBlock(mem, scope="user:ann")
    await block.aput([ChatMessage(role="user", content="the deploy key rotates on Fridays")])
    text = await block.aget([])
    assert "deploy key rotates" in text


async def test_session_only_reads_the_current_session(mem: ContextForge) -> None:
    block = ContextForgeMemoryBlock(mem, scope="user:ann", session_only=True)
    await block.aput([ChatMessage(role="user", content="tea in session one")], session_id="one")
    await block.aput([ChatMessage(role="user", content="tea in session two")], session_id="two")
    question = [ChatMessage(role="user", content="tea")]
    text = await block.aget(question, session_id="two")
    assert "session two" in text and "session one" not in text
    everywhere = ContextForgeMemoryBlock(mem, scope="user:ann")
    both = await everywhere.aget(question, session_id="two")
    assert "session two" in both and "session one" in both


async def test_atruncate_repacks_within_the_smaller_budget(mem: ContextForge) -> None:
    block = ContextForgeMemoryBlock(mem, scope="user:ann", token_budget=400)
    await block.aput(
        [ChatMessage(role="user", content=f"project note {n}: " + "detail " * 10) for n in range(8)]
    )
    question = [ChatMessage(role="user", content="project note")]
    full = await block.aget(question)
    whole = await mem.context("project note", "user:ann", 400, kinds=["message"])
    assert full == whole.text and whole.tokens > 60

    cut = await block.atruncate(full, 40)
    assert cut is not None and cut != full
    smaller = await mem.context("project note", "user:ann", whole.tokens - 40, kinds=["message"])
    assert cut == smaller.text and smaller.tokens <= whole.tokens - 40
    assert len(smaller.hits) < len(whole.hits)

    assert await block.atruncate(full, whole.tokens) is None  # nothing left
    assert await block.atruncate("not a block of ours", 1) is None
    assert await block.atruncate(full, 0) == full


async def test_memory_truncates_the_block_instead_of_dropping_it(
    mem: ContextForge, make_memory: MakeMemory
) -> None:
    block = ContextForgeMemoryBlock(mem, scope="user:ann", token_budget=1000, tokenizer_fn=words)
    await block.aput(
        [ChatMessage(role="user", content=f"project note {n}: " + "detail " * 10) for n in range(8)]
    )
    roomy = make_memory(block, "big", token_limit=10_000)
    full = (await roomy.aget(input="project note"))[0].content or ""
    assert len(words(full)) > 100
    tight = make_memory(block, "small", token_limit=80)
    cut = (await tight.aget(input="project note"))[0].content or ""
    assert "project note" in cut  # re-packed, still there
    assert len(words(cut)) < len(words(full))


async def test_truncation_is_exact_with_memorys_default_tokenizer() -> None:
    # Memory counts with tiktoken cl100k by default: a cl100k store counts alike.
    async with ContextForge.open(Config(tokenizer="cl100k")) as cf:
        block = ContextForgeMemoryBlock(cf, scope="user:ann", token_budget=1000)
        await block.aput(
            [
                ChatMessage(role="user", content=f"project note {n}: " + "detail " * 10)
                for n in range(8)
            ]
        )
        full = await block.aget([ChatMessage(role="user", content="project note")])
        count = get_tokenizer()  # what Memory counts with by default
        size = len(count(full))
        cut = await block.atruncate(full, size // 2)
        assert cut is not None
        assert len(count(cut)) <= size - size // 2
        assert cut.count("[mem:") < full.count("[mem:")


async def test_sync_twin_and_arguments(mem: ContextForge) -> None:
    twin = ContextForgeSync.sharing(mem)
    try:
        block = ContextForgeMemoryBlock(twin, scope="user:ann")
        assert block.store is mem
    finally:
        twin.close()
    with pytest.raises(TypeError):
        ContextForgeMemoryBlock(mem, store=mem, scope="user:ann")
    with pytest.raises(TypeError):
        ContextForgeMemoryBlock(scope="user:ann")
    with pytest.raises(TypeError):
        ContextForgeMemoryBlock(object(), scope="user:ann")  # type: ignore[arg-type]


async def test_messages_without_text_are_skipped(mem: ContextForge) -> None:
    block = ContextForgeMemoryBlock(mem, scope="user:ann")
    await block.aput([ChatMessage(role="assistant", content=""), ChatMessage(role="tool")])
    assert await mem.count() == 0
    await block.aput(
        [ChatMessage(role="user", content="ok"), ChatMessage(role="user", content="ok")]
    )
    assert await mem.count("user:ann") == 2  # one entry per message, even repeated


# Scopes that look alike: the same prefix, a nested level, an escaped slash.
LOOK_ALIKES = ["user:a", "user:a/b", "user:ab", "user:a%2Fb", "user:a_b", "user:A"]
scope_labels = st.lists(
    st.one_of(
        st.sampled_from(LOOK_ALIKES),
        st.text(
            st.characters(codec="utf-8", categories=("L", "N", "P", "S")), min_size=1, max_size=8
        )
        .filter(lambda s: s.strip() == s)
        .map(lambda s: f"user:{s}"),
    ),
    min_size=2,
    max_size=5,
    unique_by=lambda s: s,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scopes=scope_labels)
def test_blocks_never_see_other_scopes(scopes: list[str]) -> None:
    async def run() -> None:
        async with ContextForge.open() as cf:
            blocks = [ContextForgeMemoryBlock(cf, scope=s) for s in scopes]
            for n, block in enumerate(blocks):
                await block.aput([ChatMessage(role="user", content=f"secret zq{n}x marker")])
            question = " ".join(f"zq{n}x" for n in range(len(blocks))) + " secret marker"
            for n, block in enumerate(blocks):
                text = await block.aget([ChatMessage(role="user", content=question)])
                newest = await block.aget([])
                for m in range(len(blocks)):
                    assert (f"zq{m}x" in text) == (m == n), (scopes, n, m)
                    assert (f"zq{m}x" in newest) == (m == n), (scopes, n, m)

    asyncio.run(run())
