"""``distill`` and ``distill-session``: condense a transcript, or a conversation
already saved in the store, into a summary and durable facts."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import TYPE_CHECKING, TextIO

import click

from ..distill import OpenAIChatDistiller
from ..distill.run import DistillResult
from .errors import CliError
from .lines import read_text
from .options import common, common_options
from .render import count, echo_json, table
from .safe import printable

if TYPE_CHECKING:
    from ..sync import ContextForgeSync

__all__ = ["distill", "distill_session"]


_max_chunk_tokens = click.option(
    "--max-chunk-tokens",
    type=click.IntRange(min=16),
    metavar="TOKENS",
    help="Split the transcript into chunks of at most this many tokens (default 2048).",
)
_model = click.option(
    "--model", metavar="NAME", help="Distil with this model instead of the offline extractor."
)
_base_url = click.option(
    "--base-url",
    metavar="URL",
    help="An OpenAI-compatible server for --model, e.g. http://localhost:11434/v1.",
)
_api_key = click.option(
    "--api-key",
    envvar="OPENAI_API_KEY",
    metavar="KEY",
    help="Its API key (default $OPENAI_API_KEY).",
)


@click.command()
@click.argument("transcript", type=click.File("r", encoding="utf-8"))
@click.option("--scope", required=True, metavar="SCOPE", help="Where the summary and facts go.")
@click.option("--session", "session_id", metavar="ID", help="The conversation it came from.")
@_max_chunk_tokens
@_model
@_base_url
@_api_key
@common_options()
def distill(
    transcript: TextIO,
    scope: str,
    session_id: str | None,
    max_chunk_tokens: int | None,
    model: str | None,
    base_url: str | None,
    api_key: str | None,
) -> None:
    """Distil TRANSCRIPT ('-' for stdin; at most 16 Mi characters) and save its
    summary and facts.

    TRANSCRIPT is plain text (one message per line, 'Speaker: text') or JSON: a
    list of {"role", "content"} messages. Without --model the offline extractive
    distiller picks salient sentences; facts already in the scope are skipped.

    With --model, a model server that cannot be reached, refuses the request or
    answers unusably (after retries) exits with code 4, and nothing is saved.
    """
    text = read_text(transcript, transcript.name)
    messages: object = text
    if text.lstrip().startswith("["):
        try:
            messages = json.loads(text)
        except json.JSONDecodeError as err:
            raise CliError(f"{transcript.name}: not valid JSON: {err}") from None
    if (model is None) != (base_url is None):
        raise CliError("--model and --base-url go together")
    opts = common()
    with opts.store() as store:
        if model is not None and base_url is not None:
            result = asyncio.run(
                _with_model(
                    store, messages, scope, session_id, max_chunk_tokens, base_url, model, api_key
                )
            )
        else:
            result = store.distill_and_save(
                messages,  # type: ignore[arg-type]
                scope=scope,
                session_id=session_id,
                max_chunk_tokens=max_chunk_tokens,
            )
    _print(result, opts.as_json)


async def _with_model(
    store: object,
    messages: object,
    scope: str,
    session_id: str | None,
    max_chunk_tokens: int | None,
    base_url: str,
    model: str,
    api_key: str | None,
) -> DistillResult:
    from ..sync import ContextForgeSync

    assert isinstance(store, ContextForgeSync)
    async with OpenAIChatDistiller(base_url, model, api_key) as distiller:
        return await asyncio.to_thread(
            store.distill_and_save,
            messages,  # type: ignore[arg-type]
            scope=scope,
            session_id=session_id,
            distiller=distiller,
            max_chunk_tokens=max_chunk_tokens,
        )


@click.command("distill-session")
@click.option(
    "--scope",
    required=True,
    metavar="SCOPE",
    help="The scope the conversation is saved in; the summary and facts go there too.",
)
@click.option(
    "--session", "session_id", required=True, metavar="ID", help="The conversation to distil."
)
@_max_chunk_tokens
@_model
@_base_url
@_api_key
@common_options()
def distill_session(
    scope: str,
    session_id: str,
    max_chunk_tokens: int | None,
    model: str | None,
    base_url: str | None,
    api_key: str | None,
) -> None:
    """Distil a conversation already saved in the store (the entries of session
    --session in --scope, oldest first, except summaries and facts saved by an
    earlier distillation) and save its summary and facts in the same scope and
    session, each linked to the entries it rests on (see 'contextforge
    sources').

    A message's speaker is its metadata's "name", "role" or "speaker". Without
    --model the offline extractive distiller picks salient sentences; facts
    already in the scope are skipped. A session with no messages in the scope
    exits with code 2, and nothing is saved.

    With --model, a model server that cannot be reached, refuses the request or
    answers unusably (after retries) exits with code 4, and nothing is saved.
    """
    if (model is None) != (base_url is None):
        raise CliError("--model and --base-url go together")
    opts = common()
    with opts.store() as store:
        if model is not None and base_url is not None:
            result = asyncio.run(
                _session_with_model(
                    store, scope, session_id, max_chunk_tokens, base_url, model, api_key
                )
            )
        else:
            result = store.distill_session(scope, session_id, max_chunk_tokens=max_chunk_tokens)
    _print(result, opts.as_json)


async def _session_with_model(
    store: ContextForgeSync,
    scope: str,
    session_id: str,
    max_chunk_tokens: int | None,
    base_url: str,
    model: str,
    api_key: str | None,
) -> DistillResult:
    async with OpenAIChatDistiller(base_url, model, api_key) as distiller:
        return await asyncio.to_thread(
            store.distill_session,
            scope,
            session_id,
            distiller=distiller,
            max_chunk_tokens=max_chunk_tokens,
        )


def _print(result: DistillResult, as_json: bool) -> None:
    if as_json:
        echo_json(
            {
                "model": result.model,
                "chunks": result.chunks,
                "saved": [vars(i) for i in result.saved],
                "skipped": [vars(i) for i in result.skipped],
            }
        )
        return
    rows = [[i.id, i.kind, i.fact_kind or "", "saved", i.text] for i in result.saved]
    rows += [[i.id, i.kind, i.fact_kind or "", "exists", i.text] for i in result.skipped]
    click.echo(table(["id", "kind", "fact kind", "status", "text"], rows))
    click.echo(
        f"{len(result.saved)} saved, {len(result.skipped)} already there "
        f"({count(result.chunks, 'chunk')}, {printable(result.model)})",
        err=True,
    )
    sys.stdout.flush()
