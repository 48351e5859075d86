"""``Distilling``: the methods of ``ContextForge`` that turn conversations into
durable facts (``distill_and_save``, ``distill_session``). A mixin:
``ContextForge`` holds the engine and the embedder."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from . import _convert
from .distill.run import distill_into
from .embedding import Embedding
from .errors import InvalidInputError

if TYPE_CHECKING:
    from . import _core
    from .distill import Distiller, Transcript
    from .distill.run import DistillResult

__all__ = ["Distilling"]


class Distilling(Embedding):
    """Distillation (mixed into ``ContextForge``)."""

    __slots__ = ()

    async def _session_entries(self, scope: str, session: str) -> list[_core.Hit]:
        """Every entry of a session that holds now, newest first."""
        record = _convert.list_record(scope, None, session)
        out: list[_core.Hit] = []
        cursor: tuple[int, int] | None = None
        while True:
            page, cursor = await self._engine.list_page(record, cursor, _convert.PAGE)
            out.extend(page)
            if cursor is None or len(page) < _convert.PAGE:
                return out

    async def distill_and_save(
        self,
        transcript: Transcript,
        *,
        scope: str,
        session_id: str | None = None,
        distiller: Distiller | None = None,
        max_chunk_tokens: int | None = None,
        summary: Literal["structural", "model"] = "structural",
    ) -> DistillResult:
        """Distils a transcript into a short summary and durable facts, and saves them.

        The transcript is a string (one message per line) or a list of chat
        messages (``{"role", "content"}`` mappings or ``(speaker, text)`` pairs).
        Secrets are scrubbed before any model sees it; it is split into chunks of
        at most ``max_chunk_tokens`` (default 2048) on message, then sentence
        boundaries; each chunk is distilled concurrently (bounded by the
        distiller's ``concurrency``); facts are deduplicated and the summaries
        joined (``summary="structural"``) or reduced by one more model call
        (``summary="model"``). The summary and facts are saved as entries of kinds
        ``summary`` and ``fact`` (metadata: source session, chunk, model, fact
        kind) in one transaction; facts already in the scope are skipped.

        Provenance: when the messages carry their own ids (an ``"id"`` in a
        message mapping: a ``str`` as given, an ``int`` as its decimal string),
        each fact is saved with ``sources=`` the ids of the messages it rests on,
        as external references, and the summary with the ids of every message
        (the first 200); read them back with :meth:`sources`. The offline
        distiller knows each fact's message exactly; a model distiller is shown
        the messages numbered and names them (see ``OpenAIChatDistiller``).
        A text transcript, pairs, and messages without an id get no sources,
        nor does an id the store would refuse as a reference (blank, over 2048
        bytes, holding a control character or a secret). Messages already saved
        in the store are distilled with links to their entries by
        :meth:`distill_session`.

        Args:
            distiller: Any async callable ``text -> Distillation``, such as
                :class:`contextforge.distill.OpenAIChatDistiller`. ``None`` uses the
                offline extractive distiller (no model: it picks salient sentences).

        Raises:
            InvalidInputError: an empty or malformed transcript; nothing is saved.
            DistillError: the model failed or answered with invalid JSON; nothing
                is saved.
        """
        return await distill_into(
            self._engine,
            transcript,
            scope=scope,
            session_id=session_id,
            distiller=distiller,
            max_chunk_tokens=max_chunk_tokens,
            summary=summary,
            embed=self._embedder(),
        )

    async def distill_session(
        self,
        scope: str,
        session_id: str,
        *,
        distiller: Distiller | None = None,
        max_chunk_tokens: int | None = None,
        summary: Literal["structural", "model"] = "structural",
    ) -> DistillResult:
        """Distils the messages already saved in ``scope`` for ``session_id``, as
        :meth:`distill_and_save` does a transcript, and links each fact to the
        entries of the messages it rests on (``sources=`` their entry ids; the
        summary to every message's, the first 200), so that
        ``forget(ids=[message], cascade=True)`` also forgets what was distilled
        from it.

        The messages are the session's entries that hold now, oldest first
        (by timestamp, then id), except those of kinds ``summary`` and
        ``fact``: what distillation saves, in the same session. Each message's
        speaker is its metadata's ``"name"``, ``"role"`` or ``"speaker"`` (the
        first that is a non-empty ``str``), else none. The summary and facts are
        saved in the same scope and session.

        Raises:
            InvalidInputError: the session has no messages; nothing is saved.
            DistillError: the model failed or answered with invalid JSON; nothing
                is saved.
        """
        scope = _convert.label("scope", scope)
        session = _convert.label("session_id", session_id)
        entries = [
            entry
            for entry in await self._session_entries(scope, session)
            if entry.kind not in ("summary", "fact")
        ]
        if not entries:
            raise InvalidInputError(f"session {session!r} of scope {scope!r} has no messages")
        entries.reverse()  # list() is newest first
        pairs: list[tuple[str | None, str]] = []
        for entry in entries:
            meta = entry.metadata or {}
            speaker = next(
                (
                    meta[name]
                    for name in ("name", "role", "speaker")
                    if isinstance(meta.get(name), str) and meta[name].strip()
                ),
                None,
            )
            pairs.append((speaker, entry.content))
        return await distill_into(
            self._engine,
            pairs,
            scope=scope,
            session_id=session,
            distiller=distiller,
            max_chunk_tokens=max_chunk_tokens,
            summary=summary,
            embed=self._embedder(),
            links=[entry.id for entry in entries],
        )
