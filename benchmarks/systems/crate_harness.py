"""Peer: the crates.io `context-forge` crate (0.9.x), run as the Rust harness binary
in benchmarks/context_forge_harness/.

The binary is built with `python benchmarks/run.py --build-harness` (cargo, a few
minutes on 2 cores) into ~/.cache/contextforge/bench-target, or
BENCH_HARNESS_TARGET; BENCH_HARNESS_BIN points at a binary built elsewhere.
Without a binary the suite skips this system and says so.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

HARNESS_DIR = Path(__file__).resolve().parents[1] / "context_forge_harness"
MANIFEST = HARNESS_DIR / "Cargo.toml"


def target_dir() -> Path:
    return Path(
        os.environ.get("BENCH_HARNESS_TARGET", "~/.cache/contextforge/bench-target")
    ).expanduser()


def binary() -> Path:
    explicit = os.environ.get("BENCH_HARNESS_BIN")
    return Path(explicit) if explicit else target_dir() / "release" / "context_forge_harness"


def _sources_digest() -> str:
    digest = hashlib.sha256()
    for path in [MANIFEST, HARNESS_DIR / "Cargo.lock", *sorted(HARNESS_DIR.glob("src/*.rs"))]:
        if path.is_file():
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _digest_file() -> Path:
    return binary().with_name(binary().name + ".sources-sha256")


def unavailable_reason() -> str | None:
    """None when the harness can run, else why not."""
    path = binary()
    if not path.is_file():
        return (
            f"harness binary not built ({path}); build it with "
            "`python benchmarks/run.py --build-harness` (needs cargo and crates.io)"
        )
    recorded = _digest_file()
    if recorded.is_file() and recorded.read_text().strip() != _sources_digest():
        return f"harness binary {path} was built from other sources; rebuild with --build-harness"
    return None


def build() -> str | None:
    """Builds the harness in release mode; returns None on success, else the reason it failed."""
    if shutil.which("cargo") is None:
        return "cargo is not installed"
    env = {**os.environ, "CARGO_TARGET_DIR": str(target_dir())}
    done = subprocess.run(
        ["cargo", "build", "--release", "--manifest-path", str(MANIFEST)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        return "cargo build failed:\n" + "\n".join(done.stderr.splitlines()[-20:])
    if "BENCH_HARNESS_BIN" not in os.environ:
        _digest_file().write_text(_sources_digest() + "\n")
    return None


def command(workload: Path, store: Path, phase: str, save_seconds: float) -> list[str]:
    return [str(binary()), str(workload), str(store), phase, str(save_seconds)]
