"""Runs one phase of one Python system in this process and prints its numbers as
one JSON line on stdout. run.py starts one worker per system and phase, so each
system has its own process, memory peak and cold start.

    python benchmarks/worker.py SYSTEM WORKLOAD.json STORE_DIR {load,cold} [SAVE_SECONDS]
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import measure
import systems
from workload import load


async def main(argv: list[str]) -> dict[str, object]:
    name, workload_path, store, phase = argv[:4]
    save_seconds = float(argv[4]) if len(argv) > 4 else 30.0
    workload = load(Path(workload_path))
    system = systems.create(name)
    if phase == "load":
        return await measure.load_phase(system, workload, Path(store), save_seconds)
    if phase == "cold":
        return await measure.cold_phase(system, workload, Path(store))
    raise SystemExit(f"unknown phase {phase!r}")


if __name__ == "__main__":
    result = asyncio.run(main(sys.argv[1:]))
    print(json.dumps(result))
