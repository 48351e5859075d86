"""Knowledge updates: contextforge with keyed facts, without keys, and plain BM25.

    .venv/bin/python benchmarks/knowledge_update.py [--subjects 120] [--budgets 256,64]
        [--seed 0] [--systems keys,no-keys,bm25] [--json OUT]

Generates seeded histories of facts that change (people's cities, projects'
deadlines, services' owners...) with chit-chat in between, asks for each fact its
current value, its value on a past date and its history, and prints a markdown
table of current@1, current in budget, stale leak, as-of@1 and history per system
and budget. The method and the metrics: docs/knowledge-update.md; the code:
contextforge.evaluation.updates. The BM25 baseline needs bm25s (and tantivy for
the English stemmer): .venv/bin/pip install -r benchmarks/requirements.txt.

The default (120 subjects) runs in seconds; --subjects 1000 scales it up. No
check here is about time, and the targets (keys: stale leak 0, current@1 at least
30 points over BM25) are reported, not asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from contextforge.evaluation.updates import (
    DEFAULT_BUDGETS,
    DEFAULT_SUBJECTS,
    SYSTEMS,
    generate,
    run,
    table,
)


def _ints(value: str) -> list[int]:
    try:
        out = [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected integers separated by commas: {value!r}")
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers: {value!r}")
    return out


def _systems(value: str) -> list[str]:
    out = [v.strip() for v in value.split(",") if v.strip()]
    if not out or any(s not in SYSTEMS for s in out):
        raise argparse.ArgumentTypeError(f"expected names among {','.join(SYSTEMS)}: {value!r}")
    return out


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--subjects", type=int, default=DEFAULT_SUBJECTS, help="subjects (default: %(default)s)"
    )
    p.add_argument(
        "--per-user", type=int, default=12, help="subjects per scope (default: %(default)s)"
    )
    p.add_argument("--seed", type=int, default=0, help="the dataset's seed (default: %(default)s)")
    p.add_argument(
        "--budgets",
        type=_ints,
        default=list(DEFAULT_BUDGETS),
        help=f"token budgets, separated by commas (default: {','.join(map(str, DEFAULT_BUDGETS))})",
    )
    p.add_argument(
        "--systems", type=_systems, default=list(SYSTEMS), help="default: " + ",".join(SYSTEMS)
    )
    p.add_argument("--json", metavar="OUT", help="also write every number as JSON to OUT")
    return p.parse_args(argv)


async def run_all(args: argparse.Namespace) -> int:
    dataset = generate(args.seed, args.subjects, per_user=args.per_user)
    started = time.perf_counter()
    reports = [await run(dataset, budget=b, systems=args.systems) for b in args.budgets]
    seconds = time.perf_counter() - started
    print(table(reports))
    print(f"({seconds:.1f} s)")
    if args.json:
        payload = {
            "seed": args.seed,
            "subjects": args.subjects,
            "per_user": args.per_user,
            "seconds": round(seconds, 2),
            "reports": [r.as_dict() for r in reports],
        }
        Path(args.json).write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    return 0


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    try:
        return asyncio.run(run_all(args))
    except ValueError as err:  # arguments generate() refuses
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
