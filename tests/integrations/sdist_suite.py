"""What the runners of frameworks' own test suites share: the framework's sdist
unpacked in a temporary directory, and pytest run there on its test modules
with our plugins (see langgraph_suite.py, openai_agents_suite.py)."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def unpacked(package: str) -> Iterator[Path]:
    """The installed version of ``package``'s sdist (``pip download --no-deps
    --no-binary :all:``), unpacked; the working directory while it lasts, and
    first on ``sys.path`` (the tests import their own helpers)."""
    version = importlib.metadata.version(package)
    with tempfile.TemporaryDirectory(prefix=f"{package}-suite-") as tmp:
        into = Path(tmp)
        subprocess.run(
            [
                sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                "--no-binary", ":all:", f"{package}=={version}", "-d", str(into),
            ],
            check=True,
        )  # fmt: skip
        [archive] = into.glob("*.tar.gz")
        with tarfile.open(archive) as tar:
            tar.extractall(into, filter="data")
        [root] = [p for p in into.iterdir() if p.is_dir()]
        before = os.getcwd()
        os.chdir(root)
        sys.path.insert(0, str(root))
        try:
            yield root
        finally:
            os.chdir(before)


def run(root: Path, modules: Sequence[str], argv: Sequence[str], plugins: list[object]) -> int:
    """pytest on ``modules`` of the unpacked sdist at ``root``, with its own
    configuration but none of its ``addopts``; returns pytest's exit code."""
    return int(
        pytest.main(
            [*modules, "-p", "no:cacheprovider", "-q", "-o", "addopts=", "--rootdir", str(root),
             "-c", str(root / "pyproject.toml"), *argv],
            plugins=plugins,
        )
    )  # fmt: skip
