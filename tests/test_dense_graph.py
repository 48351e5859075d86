"""Dense retrieval in a store large enough for the approximate graph (more than
20,000 vectors): scopes stay closed, the nearest vector is found, and the graph
saved at close serves the next open the same answers."""

from __future__ import annotations

from pathlib import Path

import numpy
import numpy.typing as npt
import pytest
from contextforge import ALL_SCOPES, Config, ContextForge

pytestmark = pytest.mark.slow

DIM = 16
PER_SCOPE = 11_000  # two scopes: 22,000 vectors, past the exact-scan threshold


def unit(rows: npt.NDArray[numpy.float32]) -> npt.NDArray[numpy.float32]:
    norms: npt.NDArray[numpy.float32] = numpy.linalg.norm(rows, axis=-1, keepdims=True)
    return rows / norms


async def fill(cf: ContextForge, rng: numpy.random.Generator) -> dict[str, list[int]]:
    ids: dict[str, list[int]] = {}
    for scope in ("team:a", "team:b"):
        vectors = unit(rng.standard_normal((PER_SCOPE, DIM)).astype(numpy.float32))
        items = [
            {"content": f"record {i} kept for {scope}", "scope": scope, "embedding": v}
            for i, v in enumerate(vectors)
        ]
        ids[scope] = [s.id for s in await cf.save_many(items)]
    return ids


async def test_the_nearest_vector_is_found_and_never_across_scopes(tmp_path: Path) -> None:
    rng = numpy.random.default_rng(3)
    cf = await ContextForge.open(Config(path=str(tmp_path / "m.db"), dense_weight=1.0))
    ids = await fill(cf, rng)
    await cf.flush()  # builds the graph
    # A needle in team:b, and a query that points straight at it with no word in common.
    direction = unit(rng.standard_normal(DIM).astype(numpy.float32))
    needle = await cf.save("the quarterly figures", scope="team:b", embedding=direction)
    hits = await cf.query("zebra", "team:b", 2_000, embedding=direction)
    assert hits and hits[0].id == needle.id
    # The same query from team:a never sees team:b's needle, or anything of team:b.
    hits = await cf.query("zebra", "team:a", 2_000, embedding=direction)
    b = set(ids["team:b"]) | {needle.id}
    assert hits and not b & {h.id for h in hits}
    await cf.close()

    # Reopened: the graph saved at close answers the same.
    cf = await ContextForge.open(Config(path=str(tmp_path / "m.db"), dense_weight=1.0))
    assert (tmp_path / "m.db.index" / "vectors.graph").exists()
    hits = await cf.query("zebra", ALL_SCOPES, 2_000, embedding=direction)
    assert hits[0].id == needle.id
    await cf.delete(needle.id)
    hits = await cf.query("zebra", ALL_SCOPES, 2_000, embedding=direction)
    assert needle.id not in {h.id for h in hits}
    await cf.close()
