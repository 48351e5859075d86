"""Embeddings for hybrid retrieval: calling the configured embedder and checking
what it (or a caller) hands over."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, Union, runtime_checkable

from .errors import InvalidInputError, InvalidTypeError

if TYPE_CHECKING:
    # numpy is imported only where vectors are handled: a store without
    # embeddings never loads it.
    import numpy
    import numpy.typing as npt

__all__ = ["Embedder", "Vector", "Vectors", "as_matrix", "as_vector", "embed", "embedder_name"]

Vectors: TypeAlias = "npt.NDArray[numpy.float32]"
"""An ``(n, d)`` float32 array: one row per text."""

Vector: TypeAlias = Union["npt.NDArray[Any]", Sequence[float]]
"""One embedding: a 1-D array or a sequence of floats."""


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns a list of texts into an ``(n, d)`` array, sync or async.

    A plain function works too; give it (or the object) a ``name`` attribute to
    record which model made the store's vectors, and a ``dim`` attribute to spare
    a probe call on open.
    """

    def __call__(self, texts: list[str]) -> npt.ArrayLike | Awaitable[npt.ArrayLike]: ...


def embedder_name(embedder: Callable[..., Any]) -> str:
    """The name recorded in the store for vectors from ``embedder``."""
    name = getattr(embedder, "name", None)
    if isinstance(name, str) and name.strip():
        return name
    target = embedder if inspect.isroutine(embedder) else type(embedder)
    return f"{target.__module__}.{target.__qualname__}"


async def embed(embedder: Callable[..., Any], texts: list[str], batch_size: int) -> Vectors:
    """``embedder`` applied to ``texts`` in batches. A sync embedder runs in a
    worker thread, so the event loop keeps going while it computes."""
    parts = []
    for start in range(0, len(texts), batch_size):
        batch = texts[start : start + batch_size]
        if inspect.iscoroutinefunction(embedder) or inspect.iscoroutinefunction(
            getattr(embedder, "__call__", None)  # noqa: B004 (an async __call__, not callability)
        ):
            result = await embedder(batch)
        else:
            result = await asyncio.to_thread(embedder, batch)
            if inspect.isawaitable(result):
                result = await result
        parts.append(as_matrix(result, rows=len(batch), what="the embedder's result"))
    if not parts:
        raise InvalidInputError("nothing to embed")
    dims = {p.shape[1] for p in parts}
    if len(dims) > 1:
        raise InvalidInputError(f"the embedder returned vectors of several lengths: {sorted(dims)}")
    import numpy

    return parts[0] if len(parts) == 1 else numpy.concatenate(parts)


def as_matrix(value: Any, *, rows: int, what: str) -> Vectors:
    """``value`` as a C-contiguous float32 ``(rows, d)`` array of finite numbers."""
    import numpy

    try:
        array = numpy.ascontiguousarray(value, dtype=numpy.float32)
    except (TypeError, ValueError) as err:
        raise InvalidTypeError(f"{what} is not an array of numbers: {err}") from err
    if array.ndim != 2 or array.shape[0] != rows or array.shape[1] == 0:
        raise InvalidInputError(f"{what} must have shape ({rows}, d), not {array.shape}")
    if not numpy.isfinite(array).all():
        raise InvalidInputError(f"{what} holds NaN or infinite values")
    return array


def as_vector(value: Vector, what: str = "embedding") -> npt.NDArray[numpy.float32]:
    """One embedding as a float32 1-D array."""
    import numpy

    if isinstance(value, (str, bytes)):
        raise InvalidTypeError(f"{what} must be an array of numbers, not {type(value).__name__}")
    try:
        array = numpy.ascontiguousarray(value, dtype=numpy.float32)
    except (TypeError, ValueError) as err:
        raise InvalidTypeError(f"{what} is not an array of numbers: {err}") from err
    if array.ndim != 1:
        raise InvalidInputError(f"{what} must be one-dimensional, not of shape {array.shape}")
    return array
