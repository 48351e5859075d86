"""``count_tokens``: the store's own token count, the one budgets use."""

from __future__ import annotations

import pytest
from contextforge import Config, ContextForge, ContextForgeSync, InvalidTypeError
from hypothesis import given, settings
from hypothesis import strategies as st

TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=300).filter(
    lambda t: t.strip() != ""
)


@pytest.mark.parametrize("tokenizer", ["o200k", "cl100k"])
async def test_counts_as_a_save_counts(tokenizer: str) -> None:
    async with await ContextForge.open(Config(tokenizer=tokenizer)) as cf:
        for text in ["the deploy failed: missing env var", "naïve café 東京 🚀🚀", "a " * 500]:
            hit = await cf.get(await cf.save(text, scrub=False))
            assert hit is not None
            assert await cf.count_tokens(text) == hit.tokens > 0
        assert await cf.count_tokens("") == 0


async def test_the_tokenizer_is_the_stores() -> None:
    text = "東京は日本の首都です。" * 5  # o200k holds Japanese in fewer tokens than cl100k
    async with (
        await ContextForge.open(Config(tokenizer="o200k")) as a,
        await ContextForge.open(Config(tokenizer="cl100k")) as b,
    ):
        assert 0 < await a.count_tokens(text) < await b.count_tokens(text)


@settings(max_examples=40, deadline=None)
@given(text=TEXT)
def test_any_text_counts_as_saved(text: str) -> None:
    with ContextForgeSync.open() as cf:
        saved = cf.save(text, scrub=False, dedupe=False)
        hit = cf.get(saved)
        assert hit is not None
        assert cf.count_tokens(hit.content) == hit.tokens


async def test_a_non_string_is_a_typed_error() -> None:
    async with await ContextForge.open() as cf:
        for bad in (None, 3, b"bytes", ["a"]):
            with pytest.raises(InvalidTypeError):
                await cf.count_tokens(bad)  # type: ignore[arg-type]
