"""OpenAIChatDistiller against a real HTTP server on 127.0.0.1 that speaks the
chat-completions protocol (stdlib ``http.server`` in a thread), through the real
httpx client: canned answers, malformed output, retries, rate limits, timeouts,
structured-output fallback and bounded concurrency. Plus the merge helpers."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

import pytest
from contextforge import ClosedError, ContextForgeError, InvalidInputError, InvalidTypeError
from contextforge.distill import (
    Distillation,
    Distiller,
    DistillError,
    DistillResponseError,
    DistillTimeoutError,
    Fact,
    OpenAIChatDistiller,
    coerce_transcript,
    distill_all,
    merge,
    merge_with_model,
    merge_with_sources,
    normalize_fact,
    reduce_summary,
)

# ---------------------------------------------------------------------------
# A chat-completions server
# ---------------------------------------------------------------------------


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict/list: JSON; str/bytes: sent as is
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


Responder = Callable[[dict[str, Any]], Reply]


def completion(content: str, *, model: str = "test-model", finish: str = "stop") -> Reply:
    return Reply(
        body={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": finish,
                }
            ],
        }
    )


def answer(summary: str, facts: list[dict[str, Any]], **kw: Any) -> Reply:
    return completion(json.dumps({"summary": summary, "facts": facts}), **kw)


GOOD = answer(
    "Ann and Bob planned the launch.",
    [
        {"kind": "decision", "text": "The launch moved to 14 May."},
        {"kind": "preference", "text": "Ann prefers short status updates."},
    ],
)


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class ChatServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.script: deque[Reply | Responder] = deque()
        self.default: Reply | Responder = GOOD
        self.requests: list[Request] = []
        self.lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        self.stopping = threading.Event()

    @property
    def base_url(self) -> str:
        host, port = cast(tuple[str, int], self.server_address)
        return f"http://{host}:{port}/v1"

    def next_reply(self, body: dict[str, Any]) -> Reply:
        with self.lock:
            item = self.script.popleft() if self.script else self.default
        return item if isinstance(item, Reply) else item(body)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up (timeouts) is expected here


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        server = cast(ChatServer, self.server)
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        body = json.loads(raw)
        with server.lock:
            server.requests.append(Request(self.path, dict(self.headers.items()), body))
            server.in_flight += 1
            server.max_in_flight = max(server.max_in_flight, server.in_flight)
        try:
            reply = server.next_reply(body)
            if reply.delay:
                server.stopping.wait(reply.delay)
            if isinstance(reply.body, (dict, list)):
                data = json.dumps(reply.body).encode()
                content_type = "application/json"
            elif isinstance(reply.body, str):
                data = reply.body.encode()
                content_type = "text/plain"
            else:
                data = reply.body or b""
                content_type = "application/octet-stream"
            self.send_response(reply.status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for key, value in reply.headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            with server.lock:
                server.in_flight -= 1


@pytest.fixture
def server() -> Iterator[ChatServer]:
    srv = ChatServer()
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield srv
    finally:
        srv.stopping.set()
        srv.shutdown()
        srv.server_close()
        thread.join(timeout=5)


def distiller(server: ChatServer, **kw: Any) -> OpenAIChatDistiller:
    kw.setdefault("backoff", 0.01)
    kw.setdefault("timeout", 5.0)
    return OpenAIChatDistiller(server.base_url, "test-model", **kw)


# ---------------------------------------------------------------------------
# The happy path
# ---------------------------------------------------------------------------


async def test_a_canned_answer_is_parsed(server: ChatServer) -> None:
    async with distiller(server, api_key="sk-test") as d:
        got = await d("Ann: let's move the launch to 14 May.\nBob: agreed.")
    assert got == Distillation(
        summary="Ann and Bob planned the launch.",
        facts=(
            Fact("decision", "The launch moved to 14 May."),
            Fact("preference", "Ann prefers short status updates."),
        ),
        model="test-model",
    )
    (req,) = server.requests
    assert req.path == "/v1/chat/completions"
    assert req.headers["Authorization"] == "Bearer sk-test"
    assert req.body["model"] == "test-model"
    assert req.body["temperature"] == 0.0
    system, user = req.body["messages"]
    assert system["role"] == "system" and "decision" in system["content"]
    assert user["role"] == "user" and "launch to 14 May" in user["content"]
    fmt = req.body["response_format"]
    assert fmt["type"] == "json_schema"
    schema = fmt["json_schema"]["schema"]
    assert schema["required"] == ["summary", "facts"]
    assert schema["properties"]["facts"]["items"]["properties"]["kind"]["enum"] == [
        "decision",
        "correction",
        "preference",
        "state",
        "fact",
    ]
    assert d.closed
    assert isinstance(d, Distiller)


async def test_the_client_is_reused_and_closed(server: ChatServer) -> None:
    d = distiller(server)
    await d("one")
    client = d._client
    await d("two")
    assert d._client is client is not None
    await d.aclose()
    await d.aclose()  # twice is harmless
    with pytest.raises(ClosedError):
        await d("three")
    assert len(server.requests) == 2


async def test_base_url_forms(server: ChatServer) -> None:
    for url in (server.base_url, server.base_url + "/", server.base_url + "/chat/completions"):
        async with OpenAIChatDistiller(url, "m") as d:
            assert d.url == server.base_url + "/chat/completions"
            await d("x")
    assert [r.path for r in server.requests] == ["/v1/chat/completions"] * 3


async def test_caps_on_facts_and_lengths(server: ChatServer) -> None:
    long = "word " * 200
    server.default = answer(
        "S " * 2000,
        [{"kind": "fact", "text": f"fact number {i}. {long}"} for i in range(30)]
        + [{"kind": "fact", "text": "   "}],
    )
    async with distiller(server, max_facts=5, max_fact_chars=40, max_summary_chars=100) as d:
        got = await d("text")
    assert len(got.facts) == 5
    assert all(len(f.text) <= 40 and f.text.endswith("…") for f in got.facts)
    assert got.facts[0].text.startswith("fact number 0.")
    assert len(got.summary) <= 100


async def test_lenient_about_form_strict_about_content(server: ChatServer) -> None:
    payload = {
        "summary": "s",
        "facts": [
            {"kind": " Decision ", "text": "Use Postgres.", "confidence": 0.9},
            {"kind": "fact", "text": "use  postgres."},  # a duplicate once normalised
        ],
        "extra": True,
    }
    server.script.extend(
        [
            completion("```json\n" + json.dumps(payload) + "\n```"),
            completion("<think>\nlet me see\n</think>\n" + json.dumps(payload)),
        ]
    )
    async with distiller(server) as d:
        for _ in range(2):
            got = await d("t")
            assert got.facts == (Fact("decision", "Use Postgres."),)


async def test_content_parts_and_missing_model_name(server: ChatServer) -> None:
    body = {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": json.dumps({"summary": "s", "facts": []})}
                    ],
                },
                "finish_reason": "stop",
            }
        ]
    }
    server.default = Reply(body=body)
    async with distiller(server) as d:
        got = await d("t")
    assert got == Distillation("s", (), "test-model")


# ---------------------------------------------------------------------------
# Invalid answers
# ---------------------------------------------------------------------------

INVALID = [
    ("not json", completion("Sure! Here are the facts: ...")),
    ("truncated json", completion('{"summary": "s", "facts": [{"kind": "fa')),
    ("a list", completion("[]")),
    ("no summary", completion(json.dumps({"facts": []}))),
    ("summary not str", completion(json.dumps({"summary": 3, "facts": []}))),
    ("facts not list", completion(json.dumps({"summary": "s", "facts": "x"}))),
    ("fact not object", completion(json.dumps({"summary": "s", "facts": ["x"]}))),
    ("unknown kind", answer("s", [{"kind": "opinion", "text": "x"}])),
    ("text not str", answer("s", [{"kind": "fact", "text": 5}])),
    ("cut off", completion('{"summary": "s", "facts": []}', finish="length")),
    ("empty content", completion("")),
    ("refusal", Reply(body={"choices": [{"message": {"content": None, "refusal": "no"}}]})),
    ("no choices", Reply(body={"choices": []})),
    ("body not json", Reply(body="<html>oops</html>")),
    ("body not object", Reply(body=[1, 2])),
]


@pytest.mark.parametrize("reply", [r for _, r in INVALID], ids=[n for n, _ in INVALID])
async def test_invalid_answers_raise_a_typed_error(server: ChatServer, reply: Reply) -> None:
    server.default = reply
    async with distiller(server) as d:
        with pytest.raises(DistillResponseError) as info:
            await d("t")
    assert isinstance(info.value, DistillError)
    assert isinstance(info.value, ContextForgeError)
    assert isinstance(info.value, ValueError)
    assert len(server.requests) == 1  # an invalid answer is not retried


# ---------------------------------------------------------------------------
# Retries, rate limits, timeouts
# ---------------------------------------------------------------------------


async def test_server_errors_are_retried_then_raised(server: ChatServer) -> None:
    server.default = Reply(status=500, body={"error": {"message": "boom"}})
    async with distiller(server, max_retries=2) as d:
        with pytest.raises(DistillError) as info:
            await d("t")
    assert info.value.status == 500
    assert info.value.retryable
    assert "boom" in str(info.value)
    assert len(server.requests) == 3


async def test_a_transient_error_then_success(server: ChatServer) -> None:
    server.script.extend([Reply(status=503, body="busy"), Reply(status=502, body="bad gw")])
    async with distiller(server, max_retries=3) as d:
        got = await d("t")
    assert got.facts
    assert len(server.requests) == 3


async def test_rate_limit_then_success_honours_retry_after(server: ChatServer) -> None:
    server.script.append(
        Reply(status=429, body={"error": {"message": "slow down"}}, headers={"Retry-After": "0.3"})
    )
    async with distiller(server, max_retries=1, backoff=0.0) as d:
        start = time.monotonic()
        got = await d("t")
        waited = time.monotonic() - start
    assert got.summary == "Ann and Bob planned the launch."
    assert len(server.requests) == 2
    assert waited >= 0.25


async def test_client_errors_are_not_retried(server: ChatServer) -> None:
    for status in (401, 404, 400):
        server.requests.clear()
        server.default = Reply(status=status, body={"error": {"message": "nope"}})
        async with distiller(server, max_retries=3) as d:
            with pytest.raises(DistillError) as info:
                await d("t")
        assert info.value.status == status
        assert not info.value.retryable
        assert len(server.requests) == 1


async def test_slow_answers_time_out(server: ChatServer) -> None:
    server.default = Reply(body=GOOD.body, delay=3.0)
    async with distiller(server, timeout=0.2, max_retries=1) as d:
        start = time.monotonic()
        with pytest.raises(DistillTimeoutError) as info:
            await d("t")
        took = time.monotonic() - start
    assert isinstance(info.value, TimeoutError)
    assert info.value.retryable
    assert len(server.requests) == 2
    assert took < 2.0


async def test_a_slow_answer_then_a_fast_one(server: ChatServer) -> None:
    server.script.append(Reply(body=GOOD.body, delay=3.0))
    async with distiller(server, timeout=0.3, max_retries=2) as d:
        got = await d("t")
    assert got.facts
    assert len(server.requests) == 2


async def test_an_unreachable_server_is_a_typed_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    async with OpenAIChatDistiller(
        f"http://127.0.0.1:{port}/v1", "m", max_retries=2, backoff=0.01
    ) as d:
        with pytest.raises(DistillError) as info:
            await d("t")
    assert info.value.retryable and info.value.status is None
    assert "cannot reach" in str(info.value)


# ---------------------------------------------------------------------------
# Structured-output fallback
# ---------------------------------------------------------------------------


def rejecting(*types: str) -> Responder:
    """A server that refuses these response_format types, as vLLM or llama.cpp would."""

    def respond(body: dict[str, Any]) -> Reply:
        fmt = body.get("response_format")
        if fmt is not None and fmt.get("type") in types:
            return Reply(
                status=400,
                body={"error": {"message": f"response_format type {fmt['type']} is not supported"}},
            )
        return GOOD

    return respond


async def test_a_server_rejecting_json_schema_gets_json_mode(server: ChatServer) -> None:
    server.default = rejecting("json_schema")
    async with distiller(server) as d:
        before = d.mode
        got = await d("t")
        after = d.mode
        await d("again")  # remembered: no second rejection
    assert got.facts
    assert (before, after) == ("json_schema", "json_object")
    kinds = [r.body.get("response_format", {}).get("type") for r in server.requests]
    assert kinds == ["json_schema", "json_object", "json_object"]


async def test_a_server_rejecting_both_gets_the_prompt_alone(server: ChatServer) -> None:
    server.default = rejecting("json_schema", "json_object")
    async with distiller(server) as d:
        got = await d("t")
        assert d.mode == "prompt"
    assert got.facts
    assert [("response_format" in r.body) for r in server.requests] == [True, True, False]
    assert "JSON object" in server.requests[-1].body["messages"][0]["content"]


async def test_json_schema_off_starts_in_json_mode(server: ChatServer) -> None:
    async with distiller(server, json_schema=False) as d:
        await d("t")
    assert server.requests[0].body["response_format"] == {"type": "json_object"}


async def test_a_400_about_something_else_does_not_fall_back(server: ChatServer) -> None:
    server.default = Reply(status=400, body={"error": {"message": "context length exceeded"}})
    async with distiller(server) as d:
        with pytest.raises(DistillError):
            await d("t")
        assert d.mode == "json_schema"


# ---------------------------------------------------------------------------
# Concurrency
# ---------------------------------------------------------------------------


async def test_concurrency_is_bounded(server: ChatServer) -> None:
    server.default = Reply(body=GOOD.body, delay=0.15)
    async with distiller(server, concurrency=2) as d:
        results = await asyncio.gather(*(d(f"chunk {i}") for i in range(6)))
    assert len(results) == 6
    assert server.max_in_flight == 2


async def test_distill_all_keeps_order_and_bounds_concurrency(server: ChatServer) -> None:
    def echo(body: dict[str, Any]) -> Reply:
        text = body["messages"][1]["content"]
        return Reply(
            # The one message is numbered: "[0] chunk 3".
            body=answer(
                text.split("\n")[1].removeprefix("[0] "), [{"kind": "fact", "text": text}]
            ).body,
            delay=0.05,
        )

    server.default = echo
    async with distiller(server, concurrency=8) as d:
        results = await distill_all(d, [f"chunk {i}" for i in range(7)], concurrency=3)
    assert [r.summary for r in results] == [f"chunk {i}" for i in range(7)]
    assert server.max_in_flight == 3


async def test_distill_all_cancels_the_rest_on_failure() -> None:
    started: list[str] = []
    finished: list[str] = []

    async def flaky(text: str) -> Distillation:
        started.append(text)
        if text == "bad":
            raise DistillError("no")
        await asyncio.sleep(0.5)
        finished.append(text)
        return Distillation(text)

    with pytest.raises(DistillError):
        await distill_all(flaky, ["a", "bad", "c", "d"], concurrency=2)
    assert finished == []
    assert "d" not in started or started.index("d") > started.index("bad")


# ---------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"base_url": "ftp://x"}, InvalidInputError),
        ({"base_url": "not a url"}, InvalidInputError),
        ({"base_url": 3}, InvalidTypeError),
        ({"model": ""}, InvalidInputError),
        ({"timeout": 0}, InvalidInputError),
        ({"timeout": float("nan")}, InvalidInputError),
        ({"timeout": "1"}, InvalidTypeError),
        ({"max_retries": -1}, InvalidInputError),
        ({"concurrency": 0}, InvalidInputError),
        ({"max_facts": True}, InvalidTypeError),
        ({"max_fact_chars": 3}, InvalidInputError),
        ({"api_key": 5}, InvalidTypeError),
    ],
)
def test_bad_arguments(kwargs: dict[str, Any], error: type[Exception]) -> None:
    args: dict[str, Any] = {"base_url": "http://127.0.0.1:1/v1", "model": "m"} | kwargs
    with pytest.raises(error):
        OpenAIChatDistiller(**args)


async def test_text_must_be_a_str(server: ChatServer) -> None:
    async with distiller(server) as d:
        with pytest.raises(InvalidTypeError):
            await d(b"bytes")  # type: ignore[arg-type]
    assert server.requests == []


# ---------------------------------------------------------------------------
# Merge
# ---------------------------------------------------------------------------


def test_normalize_fact_folds_form_case_and_space() -> None:
    assert normalize_fact("  The  ﬁle\u00a0is  READY ") == "the file is ready"
    assert normalize_fact("Straße") == normalize_fact("STRASSE")


def test_merge_dedupes_facts_and_joins_summaries() -> None:
    a = Distillation(
        "Part one.",
        (Fact("fact", "Ann lives in Berlin."), Fact("decision", "Ship on Friday.")),
        "m1",
    )
    b = Distillation(
        "Part two.",
        (Fact("state", "ann  lives in BERLIN."), Fact("preference", "Bob likes tea.")),
        "m1",
    )
    c = Distillation("Part one.", (Fact("decision", "ship on friday."),), "m2")
    got = merge([a, b, c])
    assert got.facts == (
        Fact("state", "Ann lives in Berlin."),  # the first text, the more specific kind
        Fact("decision", "Ship on Friday."),
        Fact("preference", "Bob likes tea."),
    )
    assert got.summary == "Part one.\nPart two."
    assert got.model == "m1,m2"
    assert merge([a, b], max_facts=2).facts == got.facts[:2]
    assert merge_with_sources([a, b, c]) == (got, (0, 0, 1))
    assert merge_with_sources([a, b, c], max_facts=1)[1] == (0,)
    capped = merge([Distillation("word " * 100), Distillation("more " * 100)], max_summary_chars=50)
    assert len(capped.summary) <= 50 and capped.summary.endswith("…")
    assert merge([]) == Distillation("", (), "")
    with pytest.raises(InvalidTypeError):
        merge(["x"])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError):
        merge([a], max_summary_chars=0)


async def test_merge_with_model_makes_one_more_call(server: ChatServer) -> None:
    server.default = answer("One summary of both.", [{"kind": "fact", "text": "ignored"}])
    parts = [
        Distillation("First half.", (Fact("fact", "A."),), "test-model"),
        Distillation("Second half.", (Fact("fact", "B."),), "test-model"),
    ]
    async with distiller(server) as d:
        got = await merge_with_model(parts, d)
        single = await merge_with_model(parts[:1], d)
    assert got == Distillation(
        "One summary of both.", (Fact("fact", "A."), Fact("fact", "B.")), "test-model"
    )
    assert single.summary == "First half."
    (req,) = server.requests  # one call for two parts, none for one
    assert "[0] First half.\n[1] Second half." in req.body["messages"][1]["content"]
    # Repeated summaries count once: nothing left to reduce, no call.
    same = [parts[0], Distillation(" First half. ", (), "x")]
    async with distiller(server) as d:
        assert await reduce_summary(same, d) == ("First half.", "")
        assert await reduce_summary([], d) == ("", "")
    assert len(server.requests) == 1


def test_values_are_validated() -> None:
    with pytest.raises(InvalidInputError):
        Fact("opinion", "x")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        Fact("fact", "  ")
    with pytest.raises(InvalidTypeError):
        Distillation("s", ("not a fact",))  # type: ignore[arg-type]
    d = Distillation("s", [Fact("fact", "x")])  # type: ignore[arg-type]
    assert d.facts == (Fact("fact", "x"),)


def test_coerce_transcript_shapes() -> None:
    assert coerce_transcript("Ann: hi\n\n  \nBob: yo") == [("Ann", "hi"), ("Bob", "yo")]
    assert coerce_transcript("hi\n\n  \nyo") == [(None, "hi"), (None, "yo")]
    assert coerce_transcript(
        [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "name": "Bot", "content": [{"type": "text", "text": "yo"}]},
            {"role": "assistant", "content": None},
            {"speaker": "Ann", "text": "t"},
            ("Bob", "pair"),
            [None, "list pair"],  # type: ignore[list-item]
            "bare",
        ]
    ) == [
        ("user", "hi"),
        ("Bot", "yo"),
        ("assistant", ""),
        ("Ann", "t"),
        ("Bob", "pair"),
        (None, "list pair"),
        (None, "bare"),
    ]
    assert coerce_transcript([]) == []
    with pytest.raises(InvalidTypeError):
        coerce_transcript(3)  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError):
        coerce_transcript([("Ann", 3)])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError):
        coerce_transcript([{"role": "user"}])
    with pytest.raises(InvalidInputError):
        coerce_transcript(["bad \ud800"])
