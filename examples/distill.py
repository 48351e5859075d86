"""Distil a transcript offline into a summary and facts, then recall a fact."""

import asyncio

from contextforge import ContextForge

TRANSCRIPT = [
    ("ann", "Morning! Quick sync on the billing migration."),
    ("bob", "We decided to move billing to Postgres 16 next quarter."),
    ("ann", "I prefer short weekly status updates over long reports."),
    ("bob", "Actually, the deadline is now 14 May, not June."),
    ("ann", "Great, talk soon."),
]


async def main() -> None:
    async with ContextForge.open() as cf:
        result = await cf.distill_and_save(TRANSCRIPT, scope="project:billing", session_id="sync-1")
        for item in result.saved:
            print(f"{item.kind:8} {item.fact_kind or '':10} {item.text}")
        hits = await cf.query("when is the billing deadline?", "project:billing", kinds=["fact"])
        assert any("14 May" in h.content for h in hits)


if __name__ == "__main__":
    asyncio.run(main())
