"""The knowledge-update benchmark: the generator, the metrics, the run, the command."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from contextforge import ContextForge, Saved
from contextforge.evaluation.updates import (
    Answer,
    Dataset,
    Report,
    SystemResult,
    generate,
    misses,
    ordered_fraction,
    present_fraction,
    run,
    score,
    table,
)


@pytest.fixture(scope="module")
def small() -> Dataset:
    return generate(seed=7, subjects=12, per_user=6)


def test_same_seed_same_dataset_other_seed_other_dataset() -> None:
    assert generate(3, 9) == generate(3, 9)
    assert generate(3, 9).items != generate(4, 9).items


def test_every_fact_is_stated_then_changed_one_to_six_times() -> None:
    data = generate(seed=1, subjects=60)
    changes = Counter(len(f.versions) - 1 for f in data.facts)
    assert set(changes) == {1, 2, 3, 4, 5, 6}
    for f in data.facts:
        assert len(set(f.values)) == len(f.values)  # a change is always to a new value
        assert len(f.versions) == len(f.values) == len(f.times)


def test_timeline_is_ordered_and_versions_follow_each_other(small: Dataset) -> None:
    times = [i.timestamp for i in small.items]
    assert times == sorted(times)
    assert small.start <= times[0] and times[-1] < small.end
    items = {i.id: i for i in small.items}
    for f in small.facts:
        assert all(a < b for a, b in zip(f.times, f.times[1:]))
        for version, t, value in zip(f.versions, f.times, f.values, strict=True):
            item = items[version]
            assert (item.key, item.scope, item.timestamp) == (f.key, f.scope, t)
            assert value in item.content and f.subject.lower() in item.content.lower()
    keyed = {i.id for i in small.items if i.key is not None}
    assert keyed == {v for f in small.facts for v in f.versions}


def test_a_user_holds_several_subjects_in_one_scope(small: Dataset) -> None:
    subjects = Counter(f.scope for f in {(f.scope, f.subject): f for f in small.facts}.values())
    assert subjects == {"user:0": 6, "user:1": 6}
    chatter = [i for i in small.items if i.key is None]
    assert len(chatter) == 12 * 6


def test_each_fact_asks_current_as_of_and_history(small: Dataset) -> None:
    by_fact = Counter((q.scope, q.key) for q in small.questions)
    assert set(by_fact.values()) == {3} and len(by_fact) == len(small.facts)
    facts = small.by_key()
    for q in small.questions:
        f = facts[q.scope, q.key]
        if q.kind == "current":
            assert q.answer == f.versions[-1] and q.as_of is None
        elif q.kind == "as_of":
            assert q.as_of is not None and q.answer == f.true_at(q.as_of)
            i = f.versions.index(q.answer)
            assert f.times[i] + timedelta(hours=4) < q.as_of < f.times[i + 1]
            assert str(q.as_of.year) in q.text
        else:
            assert q.kind == "history" and q.answer is None


def test_ordered_fraction_counts_versions_in_order() -> None:
    assert ordered_fraction(["a", "b", "c"], ["a", "b", "c"]) == 1.0
    assert ordered_fraction(["a", "b", "c"], ["c", "b", "a"]) == pytest.approx(1 / 3)
    assert ordered_fraction(["a", "b", "c"], ["a", "x", "c"]) == pytest.approx(2 / 3)
    assert ordered_fraction(["a", "b"], []) == 0.0
    assert ordered_fraction([], ["a"]) == 0.0


def test_present_fraction_ignores_order() -> None:
    assert present_fraction(["a", "b", "c"], ["c", "x", "a"]) == pytest.approx(2 / 3)
    assert present_fraction([], ["a"]) == 0.0


def test_score_of_perfect_and_of_stale_answers(small: Dataset) -> None:
    facts = small.by_key()
    perfect = {
        q.id: Answer(packed=(q.answer,))
        if q.answer is not None
        else Answer(history=facts[q.scope, q.key].versions)
        for q in small.questions
    }
    assert score(small, perfect) == {
        "current@1": 1.0,
        "current in budget": 1.0,
        "stale leak": 0.0,
        "as-of@1": 1.0,
        "history": 1.0,
    }
    # Every version, oldest first: the current one is packed but not on top.
    stale = {q.id: Answer(packed=facts[q.scope, q.key].versions) for q in small.questions}
    got = score(small, stale)
    assert got["current@1"] == 0.0 and got["current in budget"] == 1.0
    assert got["stale leak"] == 1.0 and got["history"] == 1.0


def test_misses_say_what_took_the_top_place(small: Dataset) -> None:
    facts = small.by_key()
    chatter = {i.subject: i.id for i in small.items if i.key is None}
    answers = {}
    for n, q in enumerate(q for q in small.questions if q.kind == "current"):
        fact = facts[q.scope, q.key]
        other = next(f for f in small.facts if f.subject != fact.subject)
        top = [fact.versions[0], chatter[fact.subject], other.versions[-1], None][n % 4]
        answers[q.id] = Answer(packed=() if top is None else (top, fact.versions[-1]))
    got = misses(small, answers)
    assert sum(got.values()) == pytest.approx(1.0)
    assert got["other slot, same subject"] == 0.0
    assert got["older version"] == pytest.approx(got["chit-chat, same subject"], abs=0.05)
    assert got["no hit"] > 0.0 and got["other subject"] > 0.0


def test_table_says_n_a_for_a_system_that_did_not_run() -> None:
    off = SystemResult("keys", "contextforge (keys)", False, "keys unavailable in this build")
    half = dict.fromkeys(("current@1", "current in budget", "stale leak", "as-of@1"), 0.5)
    on = SystemResult("bm25", "BM25 (bm25s)", True, "", {**half, "history": math.nan})
    text = table([Report("d", 256, (off, on))])
    assert "| 256 | contextforge (keys) | n/a | n/a | n/a | n/a | n/a |" in text
    assert "| 256 | BM25 (bm25s) | 0.500 | 0.500 | 0.500 | 0.500 | n/a |" in text
    assert "keys unavailable in this build" in text
    assert json.loads(Report("d", 256, (on,)).to_json())["systems"][0]["metrics"]["history"] is None


async def test_keys_leak_nothing_stale_and_beat_no_keys_on_current_truth(small: Dataset) -> None:
    report = await run(small, budget=256, systems=("keys", "no-keys"))
    keys, plain = report.results
    assert keys.available, keys.note
    assert keys.metrics["stale leak"] == 0.0
    assert keys.metrics["current@1"] > plain.metrics["current@1"]
    assert keys.metrics["history"] == 1.0


async def test_a_build_without_keys_still_runs_the_others(
    small: Dataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    save = ContextForge.save

    async def keyless(self: ContextForge, *args: Any, **kwargs: Any) -> Saved:
        if "key" in kwargs:
            raise TypeError("save() got an unexpected keyword argument 'key'")
        return await save(self, *args, **kwargs)

    monkeypatch.setattr(ContextForge, "save", keyless)
    keys, plain = (await run(small, budget=64, systems=("keys", "no-keys"))).results
    assert not keys.available and "keys unavailable in this build" in keys.note
    assert plain.available and plain.metrics["stale leak"] > 0.0


def test_the_command_prints_the_table(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    args = ["eval-updates", "--subjects", "3", "--systems", "no-keys", "--budget", "128"]
    done = subprocess.run(
        [sys.executable, "-m", "contextforge.cli.main", *args, "--report", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "| 128 | contextforge (no keys) |" in done.stdout
    assert json.loads(out.read_text())["reports"][0]["budget"] == 128
