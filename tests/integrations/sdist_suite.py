"""What the runners of frameworks' own test suites share: the framework's sdist
unpacked in a temporary directory, pytest run there on its test modules with
our plugins, and the plugin that leaves out the tests a runner lists and keeps
each outcome (see langgraph_suite.py, openai_agents_suite.py)."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator, Mapping, Sequence
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


class Deselect:
    """A pytest plugin: leaves out the tests in ``deselected`` ((module file, test
    function) -> the reason they are counted under; every parametrization),
    counts them by that reason in ``by_reason``, and keeps each test's outcome
    in ``outcomes`` (by node id)."""

    def __init__(self, deselected: Mapping[tuple[str, str], str]) -> None:
        self.deselected = deselected
        self.by_reason: dict[str, int] = {}
        self.outcomes: dict[str, str] = {}

    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        keep: list[pytest.Item] = []
        drop: list[pytest.Item] = []
        for item in items:
            name = getattr(item, "originalname", None) or item.name.split("[")[0]
            why = self.deselected.get((item.path.name, name))
            if why is None:
                keep.append(item)
            else:
                drop.append(item)
                self.by_reason[why] = self.by_reason.get(why, 0) + 1
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # A test's outcome: its call's, or its setup's when that failed or skipped,
        # or failed when its teardown failed.
        if report.when == "call" or (report.when == "setup" and not report.passed):
            self.outcomes[report.nodeid] = report.outcome
        elif report.when == "teardown" and report.failed:
            self.outcomes[report.nodeid] = "failed"

    def count(self, outcome: str) -> int:
        """How many tests ended with ``outcome``."""
        return sum(o == outcome for o in self.outcomes.values())
