"""contextforge (this project) through its public async Python API.

Two concurrent queries are two coroutines under asyncio.gather: the Rust side
releases the GIL and runs them on its own thread pool.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from workload import Entry, everywhere

from systems.base import Hit, Id


class ContextForgePy:
    name = "contextforge"
    concurrency: Literal["threads", "asyncio"] = "asyncio"
    audit_reads = False

    async def open(self, path: Path) -> None:
        import contextforge

        path.mkdir(parents=True, exist_ok=True)
        self.cf = await contextforge.ContextForge.open(
            contextforge.Config(path=str(path / "memory.db"), audit_reads=self.audit_reads)
        )

    async def ingest(self, entries: Sequence[Entry]) -> list[Id]:
        # A generator, as the peers build each document as they add it:
        # save_many converts and hands over items a chunk at a time.
        items = (
            {"content": e.content, "scope": e.scope, "timestamp": e.timestamp} for e in entries
        )
        return await self.cf.save_many(items)

    async def save(self, entry: Entry) -> Id:
        return await self.cf.save(
            entry.content, kind="note", scope=entry.scope, timestamp=entry.timestamp
        )

    async def query(self, text: str, scope: str | None, budget: int, now: float) -> list[Hit]:
        hits = await self.cf.query(text, everywhere(scope), budget, now=now)
        return [Hit(h.id, h.score, h.tokens, h.content) for h in hits]

    def query_sync(self, text: str, scope: str | None, budget: int, now: float) -> list[Hit]:
        raise NotImplementedError("contextforge is measured through its async API")

    async def close(self) -> None:
        await self.cf.close()


class ContextForgeAudited(ContextForgePy):
    """contextforge with ``Config(audit_reads=True)``: every query's time,
    scopes, hashed text and returned ids recorded in the store."""

    name = "contextforge_audit"
    audit_reads = True
