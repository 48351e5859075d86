"""distill_and_save through the public API: extractive default, a real HTTP model
server, scrubbing before the model, deduplication and atomicity."""

from __future__ import annotations

import pytest
from contextforge import ContextForge, InvalidInputError
from contextforge.distill import DistillError

from .test_distill_client import ChatServer, Reply, answer, distiller, server

__all__ = ["server"]  # the fixture, imported for use here

TRANSCRIPT = [
    {"role": "user", "content": "Hi, let's plan the billing migration."},
    {"role": "assistant", "content": "Sure. What database are we moving to?"},
    {"role": "user", "content": "We decided to move billing to Postgres 16 next quarter."},
    {"role": "user", "content": "Actually, the deadline is now 14 May, not June."},
    {"role": "user", "content": "I prefer short weekly status updates over long reports."},
    {"role": "assistant", "content": "Noted. Anything else?"},
    {"role": "user", "content": "The staging cluster is currently on version 15."},
]


async def test_the_extractive_default_saves_a_summary_and_facts(mem: ContextForge) -> None:
    result = await mem.distill_and_save(TRANSCRIPT, scope="proj", session_id="call-1")
    assert result.model == "contextforge-extractive" and result.chunks == 1
    kinds = [item.kind for item in result.saved]
    assert kinds.count("summary") == 1 and "fact" in kinds
    facts = " ".join(item.text for item in result.saved if item.kind == "fact")
    assert "Postgres 16" in facts and "14 May" in facts
    hits = await mem.query("billing postgres deadline", "proj", kinds=["fact"])
    assert hits and all(h.kind == "fact" for h in hits)
    fact = hits[0]
    assert fact.session_id == "call-1" and fact.metadata["source_session"] == "call-1"
    assert fact.metadata["model"] == "contextforge-extractive" and "fact_kind" in fact.metadata
    # The same transcript again: everything already exists, nothing is added.
    again = await mem.distill_and_save(TRANSCRIPT, scope="proj", session_id="call-1")
    assert again.saved == () and {i.id for i in again.skipped} == {i.id for i in result.saved}
    assert await mem.count("proj") == len(result.saved)


async def test_a_model_distiller_over_http(mem: ContextForge, server: ChatServer) -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    messages = [("ann", f"token {secret} is for the bot"), ("bob", "launch moved to 14 May")]
    async with distiller(server) as model:
        result = await mem.distill_and_save(
            messages, scope="team", distiller=model, max_chunk_tokens=16
        )
    assert result.chunks >= 2 and result.model == "test-model"
    assert {i.text for i in result.saved if i.kind == "fact"} == {
        "The launch moved to 14 May.",
        "Ann prefers short status updates.",
    }
    sent = " ".join(str(r.body) for r in server.requests)
    assert secret not in sent and "REDACTED" in sent  # scrubbed before the model saw it


async def test_model_failures_save_nothing(mem: ContextForge, server: ChatServer) -> None:
    server.default = Reply(status=500, body={"error": "boom"})
    async with distiller(server, max_retries=1) as model:
        with pytest.raises(DistillError):
            await mem.distill_and_save(TRANSCRIPT, scope="x", distiller=model)
    server.default = answer("s", [{"kind": "fact", "text": "ok"}])
    server.script.append(Reply(status=200, body="not json at all"))
    async with distiller(server, max_retries=0) as model:
        with pytest.raises(DistillError):
            await mem.distill_and_save(TRANSCRIPT, scope="x", distiller=model, max_chunk_tokens=20)
    assert await mem.count("x") == 0


@pytest.mark.parametrize("bad", ["", "   \n  ", [], [{"role": "user"}], [("a",)], 42])
async def test_bad_transcripts_are_refused(mem: ContextForge, bad: object) -> None:
    with pytest.raises(InvalidInputError):
        await mem.distill_and_save(bad, scope="x")  # type: ignore[arg-type]
    assert await mem.count() == 0


async def test_the_chunk_budget_is_checked(mem: ContextForge) -> None:
    with pytest.raises(InvalidInputError):
        await mem.distill_and_save(TRANSCRIPT, scope="x", max_chunk_tokens=4)
