from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from contextforge import Config, ContextForge, InvalidInputError, InvalidTypeError, _core


def test_python_defaults_match_the_engine() -> None:
    engine = _core.default_config()
    ours = dataclasses.asdict(Config())
    for key, value in engine.items():
        assert ours[key] == pytest.approx(value), key


def test_config_is_frozen_and_keyword_only() -> None:
    config = Config(path="x.db")
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.path = "y.db"  # type: ignore[misc]
    with pytest.raises(TypeError):
        Config("x.db")  # type: ignore[misc]


async def test_open_accepts_paths_and_configs(tmp_path: Path) -> None:
    for target in (tmp_path / "a.db", str(tmp_path / "b.db"), Config(path=str(tmp_path / "c.db"))):
        async with await ContextForge.open(target) as cf:
            await cf.save("hello")
    assert (tmp_path / "a.db.index").is_dir()


@pytest.mark.parametrize(
    "config",
    [
        Config(tokenizer="gpt-99"),
        Config(recency_weight=-1.0),
        Config(recency_half_life_days=0.0),
        Config(depth=0),
        Config(path=""),
    ],
)
async def test_bad_configs_are_refused(config: Config) -> None:
    with pytest.raises(InvalidInputError):
        await ContextForge.open(config)


async def test_open_refuses_other_types() -> None:
    with pytest.raises(InvalidTypeError):
        await ContextForge.open(42)  # type: ignore[arg-type]


async def test_cl100k_and_o200k_count_differently() -> None:
    text = "contextforge remembers multilingual text: naïve café, 東京, Привет"
    counts = []
    for tokenizer in ("o200k", "cl100k"):
        async with await ContextForge.open(Config(tokenizer=tokenizer)) as cf:
            await cf.save(text)
            [hit] = await cf.query("contextforge")
            counts.append(hit.tokens)
    assert all(c > 5 for c in counts)
    assert counts[0] != counts[1]
