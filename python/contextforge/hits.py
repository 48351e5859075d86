"""``Hits``: a query's result."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from ._core import Hit

if TYPE_CHECKING:
    from .provenance import Link

__all__ = ["Hits"]


class Hits(list[Hit]):
    """The hits of a query, best first: a plain list with one extra attribute.

    ``timings`` is ``None`` unless the query passed ``explain=True``; then it maps
    each stage to the microseconds it took: ``sync_us`` (catching up with other
    processes' writes), ``search_us`` (ranking in the index), ``pack_us`` (packing
    the budget and fetching entries) and ``total_us``.

    ``sources`` is ``None`` unless the query passed ``with_sources=True``; then
    it maps each hit's id to its direct sources (``Link``s: entry ids and
    external references, never content).
    """

    __slots__ = ("sources", "timings")

    def __init__(
        self,
        hits: Iterable[Hit] = (),
        timings: dict[str, float] | None = None,
        sources: Mapping[int, list[Link]] | None = None,
    ) -> None:
        super().__init__(hits)
        self.timings = timings
        self.sources = None if sources is None else dict(sources)
