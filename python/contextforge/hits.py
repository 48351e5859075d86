"""``Hits``: a query's result."""

from __future__ import annotations

from collections.abc import Iterable

from ._core import Hit

__all__ = ["Hits"]


class Hits(list[Hit]):
    """The hits of a query, best first: a plain list with one extra attribute.

    ``timings`` is ``None`` unless the query passed ``explain=True``; then it maps
    each stage to the microseconds it took: ``sync_us`` (catching up with other
    processes' writes), ``search_us`` (ranking in the index), ``pack_us`` (packing
    the budget and fetching entries) and ``total_us``.
    """

    __slots__ = ("timings",)

    def __init__(self, hits: Iterable[Hit] = (), timings: dict[str, float] | None = None) -> None:
        super().__init__(hits)
        self.timings = timings
