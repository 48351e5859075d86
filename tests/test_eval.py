"""The retrieval-quality harness: metrics, specs, the run, reports, the CLI, LoCoMo."""

from __future__ import annotations

import json
import math
import typing
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from contextforge import Config, InvalidInputError
from contextforge.cli.evaluate import _coerce
from contextforge.evaluation import (
    Run,
    SpecError,
    evaluate,
    find_locomo_dir,
    hit_at,
    load_locomo,
    load_spec,
    ndcg_at,
    parse_locomo_datetime,
    recall_at,
    reciprocal_rank,
    score,
    smoke_spec,
    spec_from_dict,
)
from contextforge.evaluation.cli import config_from_pairs, main
from contextforge.evaluation.locomo import ENV_VAR

LOCOMO = find_locomo_dir()
needs_locomo = pytest.mark.skipif(
    LOCOMO is None, reason=f"LoCoMo dev set not found (set {ENV_VAR})"
)


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=timezone.utc)


def tiny() -> dict[str, Any]:
    """Two scopes; 'kiwi' also in the other scope, which must never be returned."""
    return {
        "name": "tiny",
        "entries": [
            {
                "id": "k1",
                "content": "Ana: I blend a kiwi smoothie every morning.",
                "scope": "u:ana",
                "session_id": "s1",
                "timestamp": "2024-01-01T08:00:00Z",
            },
            {
                "id": "k2",
                "content": "Ana: My brother Rui hates kiwi.",
                "scope": "u:ana",
                "session_id": "s1",
                "timestamp": 1704103200,
            },
            {
                "id": "k3",
                "content": "Ana: The bike needs new brakes before Sunday.",
                "scope": "u:ana",
                "session_id": "s2",
                "timestamp": "2024-02-01T09:00:00",
                "kind": "fact",
                "metadata": {"source": "chat"},
            },
            {
                "id": 4,
                "content": "Bo: kiwi smoothie kiwi smoothie every morning.",
                "scope": "u:bo",
                "session_id": "s9",
                "timestamp": "2024-03-01T00:00:00+02:00",
            },
        ],
        "queries": [
            {
                "id": "q1",
                "text": "kiwi smoothie",
                "scope": "u:ana",
                "relevant": ["k1"],
                "category": "food",
            },
            {
                "id": "q2",
                "text": "who dislikes kiwi",
                "scope": "u:ana",
                "relevant": ["k1", "k2"],
                "category": "food",
            },
            {
                "id": "q3",
                "text": "bike brakes",
                "scope": ["u:ana", None],
                "relevant": ["k3"],
                "now": "2024-02-02T00:00:00Z",
            },
        ],
    }


# Metrics


def test_metrics_by_hand() -> None:
    rel = {"a", "b"}
    ranked = ["x", "a", "y", "b"]
    assert [recall_at(rel, ranked, k) for k in (1, 2, 4, 10)] == [0.0, 0.5, 1.0, 1.0]
    assert [hit_at(rel, ranked, k) for k in (1, 2)] == [0.0, 1.0]
    assert reciprocal_rank(rel, ranked) == 0.5
    assert reciprocal_rank(rel, ["x", "y"]) == 0.0
    ideal = 1 + 1 / math.log2(3)
    assert ndcg_at(rel, ranked, 4) == pytest.approx((1 / math.log2(3) + 1 / math.log2(5)) / ideal)
    assert ndcg_at(rel, ranked, 1) == 0.0
    assert ndcg_at(rel, ["a", "b"], 2) == pytest.approx(1.0)
    assert ndcg_at({"a"}, ["a", "b"], 5) == pytest.approx(1.0)


# Specs


def test_spec_reads_ids_timestamps_and_defaults(tmp_path: Path) -> None:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(tiny()))
    spec = load_spec(path)
    assert [e.id for e in spec.entries] == ["k1", "k2", "k3", "4"]
    assert [e.timestamp for e in spec.entries] == [
        utc(2024, 1, 1, 8),
        utc(2024, 1, 1, 10),
        utc(2024, 2, 1, 9),
        utc(2024, 2, 29, 22),
    ]
    assert spec.entries[0].kind == "note" and spec.entries[2].kind == "fact"
    assert spec.entries[2].metadata == {"source": "chat"}
    assert spec.queries[2].scope == ("u:ana", None)
    assert spec.queries[2].category is None and spec.queries[2].now == utc(2024, 2, 2)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["entries"].append(dict(d["entries"][0])), "used twice"),
        (lambda d: d["queries"][0].update(relevant=["nope"]), "does not exist"),
        (lambda d: d["queries"][0].update(relevant=["4"]), "outside its scope"),
        (lambda d: d["queries"][0].update(relevant=[]), "no relevant"),
        (lambda d: d["entries"][0].update(timestamp="yesterday"), "bad timestamp"),
        (lambda d: d["entries"][0].pop("timestamp"), "timestamp"),
        (lambda d: d["entries"][0].update(content="  "), "content"),
        (lambda d: d.pop("queries"), "'queries' must be a list"),
        (lambda d: d["queries"][0].update(scope=[]), "scope list"),
    ],
)
def test_spec_errors_name_the_problem(change: Any, message: str) -> None:
    data = tiny()
    change(data)
    with pytest.raises(SpecError, match=message):
        spec_from_dict(data)


def test_load_spec_refuses_non_json(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match="not JSON"):
        load_spec(path)


# Running


async def test_evaluate_scores_in_scope_with_budget() -> None:
    spec = spec_from_dict(tiny())
    report = await evaluate(spec, ks=(1, 2), budget=1 << 20)
    by_id = {q.id: q for q in report.queries}
    assert by_id["q1"].ranked[0] == "k1" and by_id["q1"].metrics["recall@1"] == 1.0
    assert all("4" not in q.ranked + q.packed for q in report.queries)
    assert by_id["q2"].metrics["recall@2"] == 1.0
    assert by_id["q3"].metrics["mrr"] == 1.0
    assert report.overall("recall@budget") == 1.0
    assert report.depth == Config().depth and report.config["path"] == ":memory:"
    assert list(report.summary()) == ["all", "food", "uncategorized"]
    assert report.summary()["food"]["queries"] == 2.0


async def test_budget_recall_counts_only_what_fits() -> None:
    spec = spec_from_dict(tiny())
    full = await evaluate(spec, ks=(2,), budget=1 << 20)
    one = max(q.packed_tokens for q in full.queries if len(q.packed) == 1)
    tight = await evaluate(spec, ks=(2,), budget=one)
    q2 = next(q for q in tight.queries if q.id == "q2")
    assert q2.metrics["recall@2"] == 1.0
    assert len(q2.packed) == 1 and q2.packed_tokens <= one
    assert q2.metrics["recall@budget"] == 0.5


async def test_recency_follows_the_query_clock() -> None:
    data = {
        "entries": [
            {
                "id": "old",
                "content": "the office moved to Porto",
                "scope": "t",
                "session_id": "a",
                "timestamp": "2023-01-01T00:00:00Z",
            },
            {
                "id": "new",
                "content": "the office moved to Braga",
                "scope": "t",
                "session_id": "b",
                "timestamp": "2024-01-01T00:00:00Z",
            },
        ],
        "queries": [
            {"id": "q", "text": "where did the office move", "scope": "t", "relevant": ["new"]}
        ],
    }
    report = await evaluate(spec_from_dict(data), Config(recency_weight=1.0), ks=(1,))
    assert report.overall("recall@1") == 1.0


@pytest.mark.parametrize(("ks", "budget"), [((), 10), ((0,), 10), ((1,), 0), ((1,), True)])
async def test_evaluate_refuses_bad_settings(ks: tuple[int, ...], budget: int) -> None:
    with pytest.raises(ValueError):
        await evaluate(spec_from_dict(tiny()), ks=ks, budget=budget)


async def test_smoke_spec_regression_gate() -> None:
    spec = smoke_spec()
    assert (len(spec.entries), len(spec.queries)) == (60, 21)
    assert len({e.scope for e in spec.entries}) == 3
    # The smoke scopes hold ~400 tokens each, so 512 would pack everything: gate at 128.
    report = await evaluate(spec, budget=128)
    # Measured with the defaults: recall@5 0.929, MRR 0.695, recall@128tok 0.952
    # (before the query stopword weight and the context and date fields, tuned on
    # LoCoMo dev: 0.905, 0.757, 1.000).
    assert report.overall("recall@5") >= 0.85
    assert report.overall("mrr") >= 0.65
    assert report.overall("recall@budget") >= 0.90


# Reports


def test_report_table_and_json() -> None:
    spec = spec_from_dict(tiny())
    runs = {
        "q1": Run(ranked=["k2", "k1"], packed=["k2"], packed_tokens=9),
        "q2": Run(ranked=["k1"], packed=["k1", "k2"], packed_tokens=20),
        "q3": Run(ranked=[], packed=[]),
    }
    report = score(spec, runs, system="fake", ks=(1, 2), budget=64, depth=10)
    lines = report.table().splitlines()
    assert lines[0].startswith("| category | queries | recall@1 | recall@2 | hit@1")
    assert lines[0].endswith("| MRR | ndcg@1 | ndcg@2 | recall@64tok |")
    assert [line.split(" | ")[0] for line in lines[2:]] == ["| all", "| food", "| uncategorized"]
    # nDCG@2: q1 1/log2(3) = 0.631, q2 1 / (1 + 1/log2(3)) = 0.613, q3 0.
    assert lines[2] == (
        "| all | 3 | 0.167 | 0.500 | 0.333 | 0.667 | 0.500 | 0.333 | 0.415 | 0.333 |"
    )
    data = json.loads(report.to_json())
    assert data["summary"]["food"]["recall@2"] == 0.75
    assert data["queries"][0]["ranked"] == ["k2", "k1"]
    assert report.table(["recall@2", "recall@budget"]).splitlines()[0] == (
        "| category | queries | recall@2 | recall@64tok |"
    )
    with pytest.raises(ValueError, match="unknown metrics"):
        report.table(["recall@3"])


# CLI


def test_cli_prints_table_and_writes_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec, out = tmp_path / "spec.json", tmp_path / "report.json"
    spec.write_text(json.dumps(tiny()))
    args = [
        str(spec),
        "--k",
        "1,2",
        "--budget",
        "64",
        "--report",
        str(out),
        "--config",
        "recency_weight=0",
        "--config",
        "depth=20",
    ]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("## tiny: 3 queries, budget 64 tokens\n")
    assert "| all | 3 |" in printed and "recall@64tok" in printed
    data = json.loads(out.read_text())
    assert data["ks"] == [1, 2] and data["config"]["recency_weight"] == 0.0
    assert data["depth"] == 20
    assert main([a for a in args if a not in ("--report", str(out))] + ["--json"]) == 0
    assert json.loads(capsys.readouterr().out) == data


def test_cli_shows_spec_text_with_control_characters_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile = tiny()
    hostile["name"] = "tiny\x1b]0;pwned\x07\u202e"
    hostile["queries"][0]["category"] = "food\x1b[2J"
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(hostile))
    assert main([str(spec)]) == 0
    printed = capsys.readouterr().out
    assert "\x1b" not in printed and "\x07" not in printed and "\u202e" not in printed
    assert "## tiny\\x1b]0;pwned\\x07\\u202e: 3 queries" in printed
    assert "| food\\x1b[2J |" in printed


def test_the_spec_format_doc_example_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = (Path(__file__).parent.parent / "docs" / "eval-spec.md").read_text(encoding="utf-8")
    blocks = doc.split("```json\n")[1:]
    assert blocks, "docs/eval-spec.md shows no JSON spec"
    for i, block in enumerate(blocks):
        spec = tmp_path / f"example{i}.json"
        spec.write_text(block.split("```")[0], encoding="utf-8")
        load_spec(spec)  # valid as written
        assert main([str(spec), "--k", "1,2"]) == 0, capsys.readouterr().err
    assert "| all |" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["missing.json"],
        ["SPEC", "--k", "x"],
        ["SPEC", "--k", "0"],
        ["SPEC", "--budget", "0"],
        ["SPEC", "--config", "path=/tmp/x"],
        ["SPEC", "--config", "depth=deep"],
        ["SPEC", "--config", "recency_weight=-1"],
        ["SPEC", "--json", "out.json"],
    ],
)
def test_cli_bad_input_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(tiny()))
    assert main([str(spec) if a == "SPEC" else a for a in args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("Error: ") and err.count("\n") == 1, err


def test_config_pairs_follow_field_types() -> None:
    config = config_from_pairs(["recency_weight=0", "depth=7", "scrub=false", "tokenizer=cl100k"])
    assert (config.recency_weight, config.depth, config.scrub) == (0.0, 7, False)
    assert config.tokenizer == "cl100k"
    hint: Any = int | None
    assert _coerce("n", "none", hint) is None and _coerce("n", "5", hint) == 5
    assert _coerce("e", "oldest", typing.Literal["oldest", "lru"]) == "oldest"
    with pytest.raises(ValueError):
        _coerce("e", "newest", typing.Literal["oldest", "lru"])


# LoCoMo


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:56 pm on 8 May, 2023", utc(2023, 5, 8, 13, 56)),
        ("12:48 am on 1 February, 2023", utc(2023, 2, 1, 0, 48)),
        ("12:05 pm on 3 Jan, 2022", utc(2022, 1, 3, 12, 5)),
        ("9:27 am on 7 February, 2022", utc(2022, 2, 7, 9, 27)),
    ],
)
def test_parse_locomo_datetime(text: str, expected: datetime) -> None:
    assert parse_locomo_datetime(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "8 May 2023",
        "1:56 pm on 8 Mayo, 2023",
        "1:56 pm on 31 June, 2023",
        "13:56 pm on 8 May, 2023",
    ],
)
def test_parse_locomo_datetime_refuses(text: str) -> None:
    with pytest.raises(SpecError):
        parse_locomo_datetime(text)


def test_load_locomo_protocol(tmp_path: Path) -> None:
    conv = {
        "speaker_a": "Ana",
        "speaker_b": "Rui",
        "session_2_date_time": "12:05 am on 9 June, 2023",
        "session_2": [{"speaker": "Rui", "dia_id": "D2:1", "text": "Got a new bike!"}],
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "Hi Rui!"},
            {
                "speaker": "Rui",
                "dia_id": "D1:2",
                "text": "Look at this.",
                "blip_caption": "a photo of a cat",
                "img_url": ["x"],
            },
        ],
        "session_3_date_time": "1:00 pm on 1 July, 2023",
        "session_1_summary": "not a session",
        "qa": [
            {"question": "Ana said hi?", "answer": "x", "evidence": ["D1:1"], "category": 2},
            {"question": "Cat and bike?", "answer": "x", "evidence": ["D1:2; D2:1"], "category": 1},
            {"question": "Bike?", "answer": "x", "evidence": ["D:2:1", "D9:9"], "category": 4},
            {
                "question": "Adversarial",
                "adversarial_answer": "x",
                "evidence": ["D1:1"],
                "category": 5,
            },
            {"question": "No evidence", "answer": "x", "evidence": [], "category": 3},
            {"question": "Broken", "answer": "x", "evidence": ["D"], "category": 3},
        ],
    }
    (tmp_path / "7.json").write_text(json.dumps(conv))
    spec = load_locomo(tmp_path)
    assert [e.id for e in spec.entries] == ["7:D1:1", "7:D1:2", "7:D2:1"]
    assert spec.entries[1].content == "Rui: Look at this. [shares a photo of a cat]"
    assert spec.entries[0].content == "Ana: Hi Rui!"
    assert {e.scope for e in spec.entries} == {"locomo:7"}
    assert [e.session_id for e in spec.entries] == ["locomo:7:s1", "locomo:7:s1", "locomo:7:s2"]
    assert spec.entries[2].timestamp == utc(2023, 6, 9, 0, 5)
    assert spec.entries[1].metadata == {"dia_id": "D1:2", "speaker": "Rui"}
    assert [(q.id, q.category, q.relevant) for q in spec.queries] == [
        ("7:q0", "temporal", ("7:D1:1",)),
        ("7:q1", "multi-hop", ("7:D1:2", "7:D2:1")),
        ("7:q2", "single-hop", ("7:D2:1",)),
    ]
    assert spec.queries[0].scope == "locomo:7"
    assert spec.notes[1] == "evidence ids: 5, repaired 2, dropped 2; questions dropped: 1"


def test_find_locomo_dir_honours_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    assert find_locomo_dir() == tmp_path
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "absent"))
    assert find_locomo_dir() is None


@needs_locomo
def test_locomo_dev_set_loads() -> None:
    assert LOCOMO is not None
    spec = load_locomo(LOCOMO)
    assert (len(spec.entries), len(spec.queries)) == (2760, 760)
    assert spec.notes[1] == "evidence ids: 1107, repaired 2, dropped 2; questions dropped: 0"
    counts: dict[str | None, int] = {}
    for q in spec.queries:
        counts[q.category] = counts.get(q.category, 0) + 1
    assert counts == {"multi-hop": 142, "temporal": 156, "open-domain": 44, "single-hop": 418}


@needs_locomo
@pytest.mark.slow
async def test_locomo_dev_quality_and_recency_cost() -> None:
    assert LOCOMO is not None
    spec = load_locomo(LOCOMO)
    defaults = await evaluate(spec, ks=(5, 10))
    flat = await evaluate(spec, Config(recency_weight=0.0), ks=(5, 10))
    # Measured: defaults recall@5 0.644, @10 0.735, @512tok 0.773; relevance-only
    # 0.653 / 0.737. The lexical targets are 0.60 and 0.70 (gated just under
    # the measured values); recency may cost at most 2 points of recall@5.
    assert defaults.overall("recall@5") >= 0.64
    assert defaults.overall("recall@10") >= 0.73
    assert flat.overall("recall@5") - defaults.overall("recall@5") <= 0.02


@needs_locomo
@pytest.mark.slow
@pytest.mark.timeout(900)
async def test_locomo_dev_hybrid_is_never_below_lexical() -> None:
    assert LOCOMO is not None
    embedder = pytest.importorskip("contextforge.embedders").LocalEmbedder
    try:
        model = embedder()
    except InvalidInputError as err:
        pytest.skip(str(err))
    spec = load_locomo(LOCOMO)
    lexical = await evaluate(spec, ks=(5, 10))
    hybrid = await evaluate(spec, Config(embedder=model), ks=(5, 10))
    # Measured: hybrid 0.659 / 0.751 / 0.787 (recall@5 / @10 / @512tok) against
    # lexical 0.644 / 0.735 / 0.773. The targets are 0.65 and 0.75.
    for metric in ("recall@5", "recall@10", "recall@budget", "mrr"):
        assert hybrid.overall(metric) >= lexical.overall(metric), metric
    assert hybrid.overall("recall@5") >= 0.655
    assert hybrid.overall("recall@10") >= 0.75
