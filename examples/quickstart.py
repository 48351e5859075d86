"""The README's quickstart: save a few memories, then ask for them back."""

import asyncio
import os
import tempfile

from contextforge import ContextForge


async def main() -> None:
    path = os.path.join(tempfile.mkdtemp(), "memory.db")
    async with ContextForge.open(path) as cf:
        await cf.save("the deploy failed: missing env var", kind="note", scope="project:demo")
        await cf.save("prefers short answers in British English", kind="fact", scope="user:42")
        hits = await cf.query("deploy failure", "project:demo", 2048)
        for hit in hits:
            print(f"{hit.score:.2f} [{hit.scope}] {hit.content}")
        assert [h.content for h in hits] == ["the deploy failed: missing env var"]

    # Memory is durable: a new process (or a reopen) finds it again.
    async with ContextForge.open(path) as cf:
        assert len(await cf.query("deploy", "project:demo", 2048)) == 1


if __name__ == "__main__":
    asyncio.run(main())
