"""`benchmarks/gate.py`, the regression gate that ends `make bench`, run on
result files written here: it passes a run within `gate.json`'s bounds and
fails one that regressed or lacks a result."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "gate.py"


def row(system: str, size: int, **values: float) -> dict[str, Any]:
    base = {"query_p50_ms": 1.0, "save_p50_ms": 1.0, "target_recall": 1.0}
    base.update({"cold_total_ms": 50.0, "ingest_s": 60.0})
    return {"system": system, "size": size, "status": "ok", **base, **values}


def write(root: Path) -> dict[str, Any]:
    """A run that passes every check; returns its parts for a test to spoil."""
    run = {
        "runs": [
            row("contextforge", 100_000, query_p50_ms=0.3, save_p50_ms=0.15),
            row("tantivy", 100_000, query_p50_ms=0.4),
            row("sqlite_fts5", 100_000, query_p50_ms=8.0, save_p50_ms=0.1),
        ]
    }
    run_1m = {"runs": [row("contextforge", 1_000_000, query_p50_ms=1.1), row("tantivy", 1_000_000)]}
    cells = [
        {
            "system": system,
            "batch": batch,
            "status": "ok",
            "entries_per_s": rate,
            "rss_added_same_mb": added,
        }
        for batch in (1, 10, 100, 1000, 10000, 100000)
        for system, rate, added in (
            ("contextforge", 20_000, 80.0),
            ("tantivy", 19_000, 110.0),
            ("sqlite_fts5", 15_000, 75.0),
        )
    ]
    ingest = {"cells": cells}
    summary = {"recall@5": 0.644, "recall@10": 0.735, "recall@budget": 0.773}
    locomo = {"systems": {"contextforge defaults": {"summary": {"all": summary}, "metrics": {}}}}
    parts = {
        "results/results.json": run,
        "results-1m/results.json": run_1m,
        "results/ingest.json": ingest,
        "results/eval_locomo.json": locomo,
    }
    save(root, parts)
    return parts


def save(root: Path, parts: dict[str, Any]) -> None:
    for name, data in parts.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data), encoding="utf-8")


def gate(root: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--results", str(root), *extra],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_run_within_the_bounds_passes(tmp_path: Path) -> None:
    write(tmp_path)
    done = gate(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "FAIL" not in done.stdout
    assert done.stdout.count("\nok ") >= 20


@pytest.mark.parametrize(
    ("spoil", "named"),
    [
        (lambda p: p["results/results.json"]["runs"][0].update(query_p50_ms=0.5), "tantivy-py"),
        (
            lambda p: p["results-1m/results.json"]["runs"][0].update(cold_total_ms=5000.0),
            "cold open",
        ),
        (
            lambda p: p["results/ingest.json"]["cells"][9].update(entries_per_s=10_000),
            "1,000 per call",
        ),
        (
            lambda p: p["results/ingest.json"]["cells"][12].update(rss_added_same_mb=120.0),
            "memory added over the same entries",
        ),
        (
            lambda p: p["results/eval_locomo.json"]["systems"]["contextforge defaults"]["summary"][
                "all"
            ].update({"recall@10": 0.70}),
            "recall@10",
        ),
        (lambda p: p["results/results.json"]["runs"][0].update(target_recall=0.99), "target"),
    ],
    ids=["query", "cold-open", "ingest", "ingest-memory", "recall", "target"],
)
def test_a_regression_fails_the_gate_and_is_named(tmp_path: Path, spoil: Any, named: str) -> None:
    parts = write(tmp_path)
    spoil(parts)
    save(tmp_path, parts)
    done = gate(tmp_path)
    assert done.returncode == 1
    failed = [line for line in done.stdout.splitlines() if line.startswith("FAIL")]
    assert len(failed) == 1 and named in failed[0], done.stdout


def test_a_missing_result_fails_except_in_a_smoke_run(tmp_path: Path) -> None:
    write(tmp_path)
    (tmp_path / "results-1m" / "results.json").unlink()
    assert gate(tmp_path).returncode == 1
    smoke = gate(tmp_path, "--smoke")
    assert smoke.returncode == 0, smoke.stdout
    assert "skip  results-1m/results.json" in smoke.stdout
