"""Accepting a transcript in the shapes callers have: text, chat messages, pairs."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import InvalidInputError, InvalidTypeError

__all__ = ["Transcript", "TranscriptMessage", "coerce_transcript", "message_ids"]

#: One message: ``{"role": ..., "content": ...}`` (OpenAI style; ``content`` may be
#: a list of parts, of which the text parts are kept), ``{"speaker": ..., "text":
#: ...}``, a ``(speaker, text)`` pair, or a bare ``str`` with no speaker.
TranscriptMessage = Mapping[str, Any] | tuple[str | None, str] | str
#: A whole transcript: one string, or a sequence of messages.
Transcript = str | Sequence[TranscriptMessage]


def _content(i: int, value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        texts: list[str] = []
        for part in value:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, Mapping):
                if part.get("type", "text") == "text":
                    text = part.get("text")
                    if not isinstance(text, str):
                        raise InvalidTypeError(f"message {i}: a text part needs a str 'text'")
                    texts.append(text)
                # Images, audio and other parts carry no text to distil.
            else:
                raise InvalidTypeError(
                    f"message {i}: content parts must be mappings, not {type(part).__name__}"
                )
        return "\n".join(texts)
    if value is None:
        return ""  # an assistant message that only called tools
    raise InvalidTypeError(f"message {i}: content must be a str, not {type(value).__name__}")


def _speaker(i: int, value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise InvalidTypeError(
        f"message {i}: the speaker must be a str or None, not {type(value).__name__}"
    )


_SPEAKER = re.compile(r"^\s*([^\W\d_][\w.'-]*(?: [\w.'-]+){0,2}):\s+(\S.*)$")


def _lines(text: str) -> list[tuple[str | None, str]]:
    """A text transcript's lines as ``(speaker, text)`` (see ``coerce_transcript``)."""
    lines = [line for line in text.splitlines() if line.strip()]
    matches = [_SPEAKER.match(line) for line in lines]
    if 2 * sum(m is not None for m in matches) < len(lines):
        return [(None, line) for line in lines]
    return [(m.group(1), m.group(2)) if m else (None, line) for line, m in zip(lines, matches)]


def coerce_transcript(transcript: Transcript) -> list[tuple[str | None, str]]:
    """``(speaker, text)`` pairs, in order, from any accepted transcript shape.

    A string is split into lines, each a message (blank lines dropped), so
    chunks break between lines. When most lines read ``Speaker: text`` (a name
    of at most three words), those lines carry that speaker; otherwise no line
    has one (so a lone ``Note: ...`` is not taken for a speaker). In a mapping the speaker is
    ``"name"`` if present, else ``"role"`` (or ``"speaker"``), and the text is
    ``"content"`` (or ``"text"``). Wrong types raise ``InvalidTypeError``; text
    that is not valid Unicode (a lone surrogate) raises ``InvalidInputError``.
    """
    if isinstance(transcript, str):
        pairs: list[tuple[str | None, str]] = _lines(transcript)
    elif isinstance(transcript, Sequence) and not isinstance(transcript, (bytes, bytearray)):
        pairs = []
        for i, message in enumerate(transcript):
            if isinstance(message, str):
                pairs.append((None, message))
            elif isinstance(message, Mapping):
                if "content" in message:
                    text = _content(i, message["content"])
                elif "text" in message:
                    text = _content(i, message["text"])
                else:
                    raise InvalidInputError(f"message {i}: needs 'content' (or 'text')")
                speaker_key = next((k for k in ("name", "role", "speaker") if message.get(k)), None)
                speaker = _speaker(i, message[speaker_key]) if speaker_key else None
                pairs.append((speaker, text))
            elif isinstance(message, (tuple, list)) and len(message) == 2:
                speaker, text = message
                if not isinstance(text, str):
                    raise InvalidTypeError(
                        f"message {i}: the text must be a str, not {type(text).__name__}"
                    )
                pairs.append((_speaker(i, speaker), text))
            else:
                raise InvalidTypeError(
                    f"message {i}: expected a mapping, a (speaker, text) pair or a str, "
                    f"not {type(message).__name__}"
                )
    else:
        raise InvalidTypeError(
            f"transcript must be a str or a sequence of messages, not {type(transcript).__name__}"
        )
    for i, (speaker, text) in enumerate(pairs):
        for value in (speaker, text):
            if value is None:
                continue
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise InvalidInputError(
                    f"message {i}: text must be valid Unicode (it holds a lone surrogate)"
                ) from None
    return pairs


def message_ids(transcript: Transcript) -> list[str | None]:
    """Each message's own id, as an external reference for provenance: the
    ``"id"`` of a message mapping (a ``str`` as given, an ``int`` as its
    decimal string), ``None`` for a message without one (a pair, a bare string,
    a mapping with no ``"id"`` or another type of id, a blank one) and for
    every line of a text transcript. One per message of :func:`coerce_transcript`;
    call it on a transcript that function accepts."""
    if isinstance(transcript, str) or not isinstance(transcript, Sequence):
        return [None] * len(coerce_transcript(transcript))
    ids: list[str | None] = []
    for message in transcript:
        value = message.get("id") if isinstance(message, Mapping) else None
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        ids.append(value if isinstance(value, str) and value.strip() else None)
    return ids
