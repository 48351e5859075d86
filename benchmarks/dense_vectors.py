"""Real sentence embeddings for the dense benchmark (``cargo bench --bench dense``).

Embeds every LoCoMo dev turn (the entries) and every question (the queries) with
the built-in ``LocalEmbedder`` (all-MiniLM-L6-v2, 384 dimensions) and writes them
as little-endian float32 rows to ``DIR/entries.f32`` and ``DIR/queries.f32``:

    .venv/bin/python benchmarks/dense_vectors.py --out benchmarks/results/minilm
    CF_BENCH_VECTORS=benchmarks/results/minilm CF_BENCH_EXACT_BELOW=0 \\
        cargo bench --bench dense

``--mw1 N`` adds N texts of the MW-1 workload generator to the entries (real
embeddings of synthetic text), for a larger sample.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from contextforge import LocalEmbedder
from contextforge.evaluation import find_locomo_dir, load_locomo


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="folder for entries.f32 and queries.f32")
    p.add_argument("--data", help="LoCoMo dev folder (default: found as eval_locomo.py finds it)")
    p.add_argument("--mw1", type=int, default=0, help="also embed this many MW-1 texts as entries")
    args = p.parse_args()
    data = Path(args.data) if args.data else find_locomo_dir()
    if data is None:
        sys.exit("no LoCoMo dev data: pass --data or set CONTEXTFORGE_LOCOMO_DIR")
    spec = load_locomo(data)
    entries = [e.content for e in spec.entries]
    queries = [q.text for q in spec.queries]
    if args.mw1:
        from workload import generate  # the benchmark's generator

        entries += [e.content for e in generate(args.mw1, queries=0, saves=0).entries]
    embed = LocalEmbedder(batch_size=64)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, texts in (("entries", entries), ("queries", queries)):
        started = time.perf_counter()
        vectors = numpy.concatenate(
            [embed(texts[i : i + 256]) for i in range(0, len(texts), 256)]
        ).astype("<f4")
        vectors.tofile(out / f"{name}.f32")
        took = time.perf_counter() - started
        print(f"{name}: {len(texts)} texts, {vectors.shape[1]} dimensions, {took:.0f} s")


if __name__ == "__main__":
    main()
