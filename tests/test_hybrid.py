"""Hybrid retrieval through the public API: embeddings per save or from an
embedder, fusion with BM25, the recorded embedder and re-embedding, MMR and
near-duplicates. Vectors here are small and hand-made, so every expectation is
exact; the built-in model has its own tests (test_embedder.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import numpy
import numpy.typing as npt
import pytest
from contextforge import (
    Config,
    ContextForge,
    ContextForgeSync,
    EmbedderMismatchError,
    InvalidInputError,
    InvalidTypeError,
)

# Three directions; entries about pets point one way, deploys another.
PET = [1.0, 0.0, 0.0]
DEPLOY = [0.0, 1.0, 0.0]
FOOD = [0.0, 0.0, 1.0]


class WordEmbedder:
    """A deterministic embedder: a text's vector counts topic words. Records
    every batch it is given."""

    name = "words-v1"
    dim = 3
    TOPICS = (
        ("dog", "puppy", "pet", "cat"),
        ("deploy", "release", "rollout"),
        ("pizza", "dinner", "food"),
    )

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def __call__(self, texts: Sequence[str]) -> npt.NDArray[numpy.float32]:
        self.batches.append(list(texts))
        out = numpy.full((len(texts), 3), 0.01, dtype=numpy.float32)
        for row, text in enumerate(texts):
            words = text.lower().split()
            for col, topic in enumerate(self.TOPICS):
                out[row, col] += sum(w.strip(".,!?:") in topic for w in words)
        return out


async def ids(cf: ContextForge, q: str, scope: str | None = "s", **kw: object) -> list[int]:
    return [h.id for h in await cf.query(q, scope, 10_000, **kw)]  # type: ignore[arg-type]


async def test_a_dense_match_is_found_without_shared_words(mem: ContextForge) -> None:
    rex = await mem.save("Rex chased the mailman again", scope="s", embedding=PET)
    await mem.save("the rollout broke staging", scope="s", embedding=DEPLOY)
    assert await ids(mem, "animal trouble") == [], "no shared words and no query vector"
    hits = await mem.query("animal trouble", "s", 1000, embedding=[0.9, 0.1, 0.0], explain=True)
    assert next(h.id for h in hits) == rex
    explain = hits[0].explain
    assert explain is not None
    assert explain["bm25"] == 0.0 and explain["dense"] == pytest.approx(0.9 / (0.82**0.5), rel=1e-5)


async def test_fusion_combines_both_sides_and_weight_zero_is_bm25_alone() -> None:
    # "deploy" matches a and b by BM25 (a better: shorter); the vector favours b.
    entries = [
        ("deploy notes", DEPLOY),
        ("deploy notes for the big friday release", PET),
        ("other", [0.8, 0.6, 0.0]),
    ]

    # The relevance floor off: at dense_weight 0 the weakest BM25 match scales
    # to 0 (so "the dense side decides among the weak BM25 matches"), which any
    # relative floor drops.
    async def order(**config: object) -> list[str]:
        config = {"recency_weight": 0.0, "min_relative_relevance": 0.0, **config}
        async with await ContextForge.open(Config(**config)) as cf:  # type: ignore[arg-type]
            for text, vec in entries:
                await cf.save(text, scope="s", embedding=vec)
            hits = await cf.query("deploy", "s", 1000, embedding=PET)
            return [h.content for h in hits]

    lexical = ["deploy notes", "deploy notes for the big friday release"]
    assert (await order(dense_weight=0.0)) == lexical
    assert (await order(dense_weight=0.0, fusion="rrf")) == lexical
    fused = await order(dense_weight=0.6)
    assert fused[0] == "deploy notes for the big friday release", "BM25 and cosine agree on it"
    assert set(fused) == {text for text, _ in entries}, "the dense side adds 'other'"
    assert "deploy notes" not in await order(dense_weight=1.0), "orthogonal to the query"
    rrf = await order(fusion="rrf", dense_weight=0.5)
    assert rrf[0] == "deploy notes for the big friday release"


async def test_weighted_fusion_scales_bm25_min_max_over_the_matches(mem: ContextForge) -> None:
    # Three BM25 matches of decreasing strength, and a dense-only entry.
    await mem.save("deploy deploy", scope="s", embedding=DEPLOY)
    await mem.save("deploy the new build", scope="s", embedding=[0.6, 0.8, 0.0])
    await mem.save("deploy it after lunch on friday with the team", scope="s", embedding=PET)
    await mem.save("the cat sleeps", scope="s", embedding=[0.8, 0.0, 0.6])
    hits = await mem.query("deploy", "s", 1000, embedding=PET, explain=True)
    assert len(hits) == 4
    w = mem.config.dense_weight
    # Entries without a session are each a session of their own, boosted by
    # their own relevance times session_weight.
    k = 1 + mem.config.session_weight
    parts = [h.explain for h in hits]
    assert all(p is not None for p in parts)
    bm25 = [p["bm25"] for p in parts if p is not None]
    low, high = min(b for b in bm25 if b > 0), max(bm25)
    assert high > low > 0
    for p in parts:
        assert p is not None
        scaled = (p["bm25"] - low) / (high - low) if p["bm25"] > 0 else 0.0
        dense = p["dense"]
        assert dense is not None
        assert p["relevance"] == pytest.approx(
            k * ((1 - w) * scaled + w * max(dense, 0.0)), abs=1e-5
        )
    # The weakest BM25 match counts 0 on that side, only its cosine (1) counts.
    weakest = next(h for h in hits if h.content.startswith("deploy it after"))
    assert weakest.explain is not None and weakest.explain["relevance"] == pytest.approx(
        k * w, abs=1e-6
    )


async def test_the_configured_embedder_embeds_saves_queries_and_updates_in_batches() -> None:
    embedder = WordEmbedder()
    # Both pet entries get the same vector here: keep near duplicates.
    config = Config(embedder=embedder, embed_batch_size=2, duplicate_similarity=1.5)
    async with await ContextForge.open(config) as cf:
        ids_ = await cf.save_many(
            [
                {"content": t, "scope": "s"}
                for t in ("my dog sleeps", "friday release", "pizza night", "a cat")
            ]
        )
        assert all(len(b) <= 2 for b in embedder.batches)
        hits = await cf.query("pet", "s", 1000)
        assert {h.id for h in hits[:2]} == {ids_[0], ids_[3]}
        # New content is re-embedded: the entry moves to the food direction.
        await cf.update(ids_[0], content="dinner is served")
        top = (await cf.query("food", "s", 1000))[:2]
        assert {h.id for h in top} == {ids_[0], ids_[2]}


async def test_async_embedders_work_and_secrets_never_reach_the_embedder() -> None:
    seen: list[str] = []

    async def embed(texts: list[str]) -> list[list[float]]:
        await asyncio.sleep(0)
        seen.extend(texts)
        return [PET for _ in texts]

    key = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 3
    async with await ContextForge.open(Config(embedder=embed)) as cf:
        await cf.save(f"my dog ate the key {key}", scope="s")
        assert seen and all(key not in text for text in seen)
        assert any("[REDACTED" in text for text in seen)
        assert len(await cf.query("anything at all", "s", 1000)) == 1


async def test_bad_embeddings_are_refused_and_change_nothing(mem: ContextForge) -> None:
    await mem.save("first", scope="s", embedding=PET)  # records a 3-dimensional embedder
    bad: list[object] = [[float("nan"), 0.0, 0.0], [1.0, 0.0], [[1.0, 0.0, 0.0]], [0.0, 0.0, 0.0]]
    for vector in bad:
        with pytest.raises(InvalidInputError):
            await mem.save("second", scope="s", embedding=vector)  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError):
        await mem.save("second", scope="s", embedding="1,0,0")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        await mem.query("first", "s", 100, embedding=[1.0, 0.0])
    with pytest.raises(InvalidInputError, match="item 1"):
        await mem.save_many([{"content": "a", "embedding": PET}, {"content": "b"}])
    assert await mem.count() == 1


async def test_vectors_stay_in_their_scope_and_die_with_their_entry(mem: ContextForge) -> None:
    mine = await mem.save("note one", scope="mine", embedding=PET)
    theirs = await mem.save("note two", scope="theirs", embedding=PET)
    assert await ids(mem, "zzz", "mine", embedding=PET) == [mine]
    assert await ids(mem, "zzz", "theirs", embedding=PET) == [theirs]
    assert await mem.delete(mine)
    assert await ids(mem, "zzz", "mine", embedding=PET) == []
    assert await mem.clear_scope("theirs") == 1
    assert await ids(mem, "zzz", None, embedding=PET) == []


async def test_vectors_survive_reopening_and_are_seen_by_a_second_handle(db_path: str) -> None:
    async with await ContextForge.open(db_path) as cf:
        pet = await cf.save("Rex", scope="s", embedding=PET)
        other = await ContextForge.open(Config(path=db_path, index_dir=db_path + ".other"))
        try:
            food = await cf.save("soup", scope="s", embedding=FOOD)
            assert (await ids(other, "zzz", embedding=FOOD))[0] == food
        finally:
            await other.close()
    async with await ContextForge.open(db_path) as cf:
        assert (await ids(cf, "zzz", embedding=PET))[0] == pet


async def test_another_embedder_is_refused_until_reembedded(db_path: str, tmp_path: Path) -> None:
    async with await ContextForge.open(db_path) as cf:
        for text, vec in (("my dog", PET), ("pizza", FOOD), ("release day", DEPLOY)):
            await cf.save(text, scope="s", embedding=vec)

    class Wider(WordEmbedder):
        name = "words-v2"
        dim = 4

        def __call__(self, texts: Sequence[str]) -> npt.NDArray[numpy.float32]:
            base = super().__call__(texts)
            return numpy.hstack([base, numpy.zeros((len(texts), 1), dtype=numpy.float32)])

    with pytest.raises(EmbedderMismatchError, match="external"):
        await ContextForge.open(Config(path=db_path, embedder=Wider()))
    async with await ContextForge.open(db_path) as cf:  # unchanged, still usable
        assert await ids(cf, "zzz", embedding=PET) != []

    progress: list[tuple[int, int]] = []
    config = Config(path=db_path, embedder=Wider(), embed_batch_size=2)
    async with await ContextForge.open(
        config, reembed=True, on_progress=lambda d, t: progress.append((d, t))
    ) as cf:
        assert progress[-1] == (3, 3) and len(progress) == 2
        top = await cf.query("dog", "s", 1000)
        assert top[0].content == "my dog"
        assert await cf.reembed() == 0, "nothing left without a vector"
    # Reopening with the same embedder needs nothing.
    async with await ContextForge.open(config) as cf:
        assert (await cf.query("pizza", "s", 1000))[0].content == "pizza"


async def test_reembed_fills_entries_saved_before_an_embedder_was_set(db_path: str) -> None:
    async with await ContextForge.open(db_path) as cf:
        await cf.save_many([{"content": f"puppy {i}", "scope": "s"} for i in range(5)])
        with pytest.raises(InvalidInputError, match="embedder"):
            await cf.reembed()
    embedder = WordEmbedder()
    config = Config(path=db_path, embedder=embedder, duplicate_similarity=1.5)
    async with await ContextForge.open(config) as cf:
        assert await cf.reembed() == 5
        assert len(await cf.query("no words in common", "s", 1000)) == 5


async def test_reembed_embeds_the_next_batch_while_the_last_is_written(db_path: str) -> None:
    async with await ContextForge.open(db_path) as cf:
        await cf.save_many([{"content": f"puppy {i}", "scope": "s"} for i in range(7)])
    events: list[str] = []

    class Recording(WordEmbedder):
        def __call__(self, texts: Sequence[str]) -> npt.NDArray[numpy.float32]:
            if texts != ["dimension probe"]:
                events.append(f"embed {len(texts)}")
            return super().__call__(texts)

    config = Config(
        path=db_path, embedder=Recording(), embed_batch_size=3, duplicate_similarity=1.5
    )
    async with await ContextForge.open(config) as cf:
        done = await cf.reembed(on_progress=lambda d, t: events.append(f"written {d}/{t}"))
        assert done == 7
        # A batch is acknowledged only after the next one was embedded: the
        # write of one overlapped the embedding of the next.
        assert events == [
            "embed 3",
            "embed 3",
            "written 3/7",
            "embed 1",
            "written 6/7",
            "written 7/7",
        ]
        assert len(await cf.query("no words in common", "s", 1000)) == 7
        assert await cf.reembed() == 0


def test_the_blocking_twin_passes_embeddings(tmp_path: Path) -> None:
    with ContextForgeSync.open(Config(embedder=WordEmbedder(), duplicate_similarity=1.5)) as cf:
        dog = cf.save("the dog", scope="s")
        cf.save("the release", scope="s", embedding=DEPLOY)
        assert cf.query("pet", "s", 100)[0].id == dog
        assert cf.reembed() == 0


async def test_near_duplicates_do_not_fill_the_budget_twice() -> None:
    texts = [
        "The deploy failed: missing env var",
        "the deploy failed - missing ENV var!",
        "deploy logs are kept for a week",
    ]

    # The floor off: the third shares only the word every entry has.
    async def contents(**config: object) -> list[str]:
        config = {"min_relative_relevance": 0.0, **config}
        async with await ContextForge.open(Config(**config)) as cf:  # type: ignore[arg-type]
            await cf.save_many([{"content": t, "scope": "s"} for t in texts])
            return [h.content for h in await cf.query("deploy failed env var", "s", 1000)]

    kept = await contents()
    assert len(kept) == 2 and texts[2] in kept
    assert len(await contents(duplicate_similarity=1.5)) == 3


async def test_near_duplicate_vectors_count_as_duplicates(mem: ContextForge) -> None:
    a = await mem.save("alpha report", scope="s", embedding=[1.0, 0.02, 0.0])
    await mem.save("beta summary", scope="s", embedding=[1.0, 0.0, 0.01])
    c = await mem.save("gamma notes", scope="s", embedding=[0.5, 0.5, 0.0])
    assert await ids(mem, "alpha report", embedding=[1.0, 0.0, 0.0]) == [a, c]


async def test_mmr_trades_relevance_for_variety() -> None:
    texts = [
        "kiwi smoothie recipe with banana",
        "kiwi smoothie recipe with banana and milk",
        "kiwi orchard visit",
    ]

    async def run(lam: float) -> tuple[list[str], list[float]]:
        async with await ContextForge.open(Config(mmr_lambda=lam, recency_weight=0.0)) as cf:
            await cf.save_many([{"content": t, "scope": "s"} for t in texts])
            hits = await cf.query("kiwi smoothie recipe", "s", 1000, explain=True)
            return [h.content for h in hits], [h.explain["diversity"] for h in hits if h.explain]

    plain, penalties = await run(1.0)
    assert plain[:2] == texts[:2] and penalties == [0.0, 0.0, 0.0]
    varied, penalties = await run(0.3)
    assert varied == [texts[0], texts[2], texts[1]]
    assert penalties[0] == 0.0 and penalties[2] > penalties[1] > 0.0


@pytest.mark.parametrize(
    "config",
    [
        Config(dense_weight=1.5),
        Config(mmr_lambda=-0.1),
        Config(fusion="max"),  # type: ignore[arg-type]
        Config(rrf_k=-1.0),
        Config(duplicate_similarity=0.0),
        Config(embed_batch_size=0, embedder=WordEmbedder()),
    ],
)
async def test_bad_hybrid_settings_are_refused(config: Config) -> None:
    with pytest.raises(InvalidInputError):
        await ContextForge.open(config)
