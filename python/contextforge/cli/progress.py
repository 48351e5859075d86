"""A one-line progress bar on stderr, shown only when asked for or on a terminal."""

from __future__ import annotations

import sys
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """``label [#####-----] done/total pct%``, redrawn in place."""

    def __init__(
        self, label: str, total: int, *, enabled: bool, stream: TextIO | None = None
    ) -> None:
        self._label = label
        self._total = max(total, 0)
        self._done = 0
        self._stream = stream or sys.stderr
        self._enabled = enabled and self._total > 0
        self._draw()

    def advance(self, n: int) -> None:
        self._done = min(self._done + n, self._total)
        self._draw()

    def close(self) -> None:
        if self._enabled:
            self._stream.write("\n")
            self._stream.flush()
            self._enabled = False

    def _draw(self) -> None:
        if not self._enabled:
            return
        share = self._done / self._total
        filled = int(share * 30)
        bar = "#" * filled + "-" * (30 - filled)
        self._stream.write(f"\r{self._label} [{bar}] {self._done}/{self._total} {share:4.0%}")
        self._stream.flush()
