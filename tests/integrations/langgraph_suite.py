"""Runs langgraph-checkpoint-sqlite's own store tests against ContextForgeStore.

    python tests/integrations/langgraph_suite.py [pytest args...]

Downloads the sdist of the installed langgraph-checkpoint-sqlite (``pip
download --no-deps --no-binary :all:``), unpacks it in a temporary directory,
and runs its tests/test_store.py, tests/test_async_store.py and
tests/test_ttl.py with ``SqliteStore`` / ``AsyncSqliteStore`` replaced by
ContextForgeStore (tests/integrations/langgraph_plugin.py; an index config
becomes ``Config(embedder=...)``). Nothing of theirs is copied into this
repository. Tests that build no store, those that need LangGraph's own vector
search, and the one that asserts AsyncSqliteStore's limitation are deselected,
each for the reason in ``DESELECTED``. Prints the counts and
exits non-zero when a test fails (or the sdist cannot be had).

Needs the ``langgraph`` extra plus langgraph-checkpoint-sqlite, pytest-asyncio,
pytest-mock and pytest-retry (the sdist's test dependencies).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODULES = ("tests/test_store.py", "tests/test_async_store.py", "tests/test_ttl.py")

# Why a test is not run. Three reasons, each counted apart in the summary:
# a test that builds no store at all (it checks a private helper or a constant
# of langgraph.store.sqlite, so it would pass or fail on their code, not ours);
# a test of what LangGraph's own vector search computes (the issue allows
# leaving out the tests that need embedding search); and AsyncSqliteStore's one
# documented limitation.
NO_STORE = "no store"
EMBEDDING = "embedding search"
LIMITATION = "an AsyncSqliteStore limitation"

_HELPER = "builds no store: checks langgraph.store.sqlite's private helper"
_VECTOR_SETUP = (
    "checks SqliteStore's vector setup (its index_config, embeddings, sqlite-vec tables)"
)
_RANKING = (
    "needs LangGraph's vector-only ranking (cosine over the index config's embeddings); "
    "contextforge fuses BM25 with the dense match and leaves out hits below its relevance floor"
)
_PER_FIELD = (
    "needs one vector per indexed field, max-pooled (a match on one field scores > 0.9); "
    "contextforge embeds an item's text, its fields joined, once"
)
_SCORES = (
    "asserts SqliteStore's exact cosine scores; contextforge's score is fused and recency-boosted"
)

# (module, test function) -> (category, why); every parametrization is left out.
# The other tests that build a store with an index config (embeddings) run: the
# plugin turns that config into Config(embedder=...) plus the adapter's fields.
DESELECTED: dict[tuple[str, str], tuple[str, str]] = {
    ("test_store.py", "test_nonnull_migrations"): (NO_STORE, _HELPER + " SqliteStore.MIGRATIONS"),
    ("test_store.py", "test_escape_glob_literal"): (NO_STORE, _HELPER + " _escape_glob_literal"),
    ("test_store.py", "test_namespace_match_pattern"): (
        NO_STORE,
        _HELPER + " _namespace_match_pattern",
    ),
    ("test_store.py", "test_list_namespaces_prefix_uses_indexable_condition"): (
        NO_STORE,
        _HELPER + " _get_batch_list_namespaces_queries (the SQL it writes)",
    ),
    ("test_store.py", "test_vector_store_initialization"): (EMBEDDING, _VECTOR_SETUP),
    ("test_async_store.py", "test_vector_store_initialization"): (EMBEDDING, _VECTOR_SETUP),
    ("test_async_store.py", "test_no_running_loop"): (
        LIMITATION,
        (
            "asserts that AsyncSqliteStore's sync methods raise InvalidStateError on the "
            "event loop's thread (there they would deadlock, waiting on the loop they "
            "block); ContextForgeStore is one class for both paths and its sync methods "
            "work there"
        ),
    ),
    ("test_store.py", "test_vector_insert_with_auto_embedding"): (EMBEDDING, _RANKING),
    ("test_store.py", "test_vector_update_with_embedding"): (EMBEDDING, _RANKING),
    ("test_store.py", "test_vector_search_with_filters"): (EMBEDDING, _RANKING),
    ("test_store.py", "test_vector_search_pagination"): (EMBEDDING, _RANKING),
    ("test_async_store.py", "test_vector_insert_with_auto_embedding"): (EMBEDDING, _RANKING),
    ("test_async_store.py", "test_vector_update_with_embedding"): (EMBEDDING, _RANKING),
    ("test_async_store.py", "test_vector_search_pagination"): (EMBEDDING, _RANKING),
    ("test_store.py", "test_embed_with_path"): (EMBEDDING, _PER_FIELD),
    ("test_store.py", "test_embed_with_path_operation_config"): (EMBEDDING, _PER_FIELD),
    ("test_async_store.py", "test_embed_with_path"): (EMBEDDING, _PER_FIELD),
    ("test_store.py", "test_scores"): (EMBEDDING, _SCORES),
}


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(HERE))
    import langgraph_plugin  # type: ignore[import-not-found]  # on sys.path just above
    import sdist_suite  # type: ignore[import-not-found]

    # Counted by category; the why is for the reader.
    counter = sdist_suite.Deselect({test: category for test, (category, _) in DESELECTED.items()})
    with sdist_suite.unpacked("langgraph-checkpoint-sqlite") as root:
        code = sdist_suite.run(root, MODULES, argv, [langgraph_plugin, counter])
    passed, failed, skipped = (counter.count(o) for o in ("passed", "failed", "skipped"))
    left_out = ", ".join(f"{n} ({why})" for why, n in sorted(counter.by_reason.items()))
    print(
        f"langgraph-checkpoint-sqlite suite on ContextForgeStore: {passed} passed, "
        f"{failed} failed, {skipped} skipped; deselected: {left_out or 'none'}"
    )
    return 0 if code == 0 and failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
