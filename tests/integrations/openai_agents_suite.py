"""Runs openai-agents' own session tests against ContextForgeSession.

    python tests/integrations/openai_agents_suite.py [pytest args...]

Downloads the sdist of the installed openai-agents (``pip download --no-deps
--no-binary :all:``), unpacks it in a temporary directory, and runs the test
modules in ``MODULES`` with ``SQLiteSession`` replaced by ContextForgeSession
(tests/integrations/openai_agents_suite_plugin.py): the tests of the SDK's
reference ``SQLiteSession``, directly and through ``Runner``, and those of its
wrapping sessions (``EncryptedSession``, ``OpenAIResponsesCompactionSession``)
over a ``SQLiteSession``. Nothing of theirs is copied into this repository.
Tests of SQLiteSession's internals (its connections, locks and tables) and of
the features the wrappers build only on SQLiteSession's private hooks are
deselected, each for the reason in ``DESELECTED``; tests/memory/test_compaction_suffix.py
is left out whole, as all but one of its tests are of such a hook
(``_get_compaction_snapshot``). Prints the counts, with how many passed
tests ran on a ContextForgeSession (the others use mocks or the SDK's own
stores), and exits non-zero when a test fails (or the sdist cannot be had).

Needs the ``openai-agents`` extra plus pytest-asyncio and cryptography (the
sdist's test dependencies for these modules; without cryptography the
EncryptedSession tests are skipped).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODULES = (
    "tests/memory/test_session.py",
    "tests/memory/test_session_limit.py",
    "tests/extensions/memory/test_encrypt_session.py",
    "tests/memory/test_openai_responses_compaction_session.py",
    "tests/memory/test_compaction_model_visibility.py",
)

_SQLITE = "tests SQLite internals of SQLiteSession, not a session's behaviour"
_THREADS = _SQLITE + " (its per-thread sqlite3 connections)"
_CONNECTION = _SQLITE + " (injects a sqlite3 connection via _connections_lock, _get_connection)"
_ROWS = _SQLITE + " (writes corrupt rows into its table via _locked_connection)"
_TABLES = _SQLITE + " (drops or probes its tables, checks its connections' transactions)"
_CLOSE = (
    "SQLiteSession.close(): a ContextForgeSession has no close (the store's owner closes "
    "the store), and an empty add_items touches no store"
)
_SNAPSHOT = (
    "needs SQLiteSession's private _get_compaction_snapshot (atomic suffix replacement); "
    "for any other Session the SDK compacts only a complete history, as documented"
)
_POP = (
    "needs SQLiteSession's private _pop_item_with_validation; EncryptedSession.pop_item "
    "documents that other sessions lack this atomic authenticated pop"
)

# module -> test function -> why it is not run; every parametrization is left out.
# Each of these fails the same way with a plain list-backed Session as SQLiteSession.
DESELECTED: dict[str, dict[str, str]] = {
    "test_session.py": {
        "test_sqlite_session_close_closes_worker_thread_connections": _THREADS,
        "test_sqlite_session_reaps_connections_from_exited_worker_threads": _THREADS,
        "test_sqlite_session_closes_retired_connections_before_the_next_allocation": _THREADS,
        "test_sqlite_session_keeps_connections_of_live_worker_threads": _THREADS,
        "test_sqlite_session_file_lock_is_shared_across_instances": _SQLITE
        + " (its _lock, _file_lock_counts)",
        "test_sqlite_session_pop_item_skips_corrupt_most_recent": _ROWS,
        "test_sqlite_session_pop_item_returns_none_after_dropping_only_corrupt_rows": _ROWS,
        "test_sqlite_session_get_items_limit_skips_corrupt_newest_rows": _ROWS,
        "test_sqlite_session_get_items_session_settings_limit_skips_corrupt_rows": _ROWS,
        "test_sqlite_session_failed_add_items_releases_write_lock": _TABLES,
        "test_sqlite_session_failed_clear_session_rolls_back": _TABLES,
        "test_sqlite_session_failed_pop_item_releases_write_lock": _TABLES,
        "test_sqlite_session_rollback_failure_evicts_connection": _CONNECTION,
        "test_sqlite_session_close_retries_quarantined_connection": _CONNECTION,
        "test_sqlite_session_post_commit_cancellation_propagates_after_known_outcome": _CONNECTION,
        "test_sqlite_session_closed_rejects_empty_add_items": _CLOSE,
    },
    "test_openai_responses_compaction_session.py": {
        # Its non-native case expects the ValueError a ContextForgeSession gets.
        "test_automatic_compaction_rollback_budget": _SNAPSHOT,
        "test_settled_pop_failure_invalidates_response_chain": _CONNECTION,
        "test_settled_clear_failure_invalidates_response_chain": _CONNECTION,
    },
    "test_compaction_model_visibility.py": {
        "test_backend_read_limit_cannot_hide_retained_history_from_compaction": _SNAPSHOT,
        "test_automatic_compaction_does_not_reload_unbounded_hidden_history": _SNAPSHOT,
        "test_expired_read_overhead_does_not_authorize_hidden_history": _SNAPSHOT,
    },
    "test_encrypt_session.py": {
        "test_encrypted_compaction_skips_unencrypted_stored_history": _SNAPSHOT,
        "test_encrypted_pop_wrong_key_preserves_recoverable_history": _POP,
        "test_encrypted_pop_rechecks_authentication_after_expired_tail": _POP,
        "test_encrypted_pop_authentication_is_atomic_with_concurrent_mutations": _POP
        + "; reads its agent_messages table with SQL",
        "test_encrypted_pop_wrong_key_preserves_row_identity": _POP
        + "; reads its agent_messages table with SQL",
        "test_encrypted_pop_cancellation_waits_for_authentication_rollback": _POP,
    },
}


class _Ours:
    """A pytest plugin: ``nodeids`` holds the tests that ran on a
    ContextForgeSession (they constructed a ``SQLiteSession``)."""

    def __init__(self, made: Callable[[], int]) -> None:
        self.made = made
        self.nodeids: set[str] = set()
        self._before = 0

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self._before = self.made()

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        if self.made() > self._before:
            self.nodeids.add(nodeid)


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(HERE))
    import openai_agents_suite_plugin  # type: ignore[import-not-found]  # on sys.path just above
    import sdist_suite  # type: ignore[import-not-found]

    counter = sdist_suite.Deselect(
        {(module, test): why for module, tests in DESELECTED.items() for test, why in tests.items()}
    )
    ours = _Ours(lambda: openai_agents_suite_plugin.SQLiteSession.made)
    with sdist_suite.unpacked("openai-agents") as root:
        code = sdist_suite.run(root, MODULES, argv, [openai_agents_suite_plugin, counter, ours])
    passed, failed = counter.count("passed"), counter.count("failed")
    on_ours = sum(counter.outcomes.get(n) == "passed" for n in ours.nodeids)
    skipped = len(counter.outcomes) - passed - failed
    deselected = sum(counter.by_reason.values())
    print(
        f"openai-agents session suites on ContextForgeSession: {passed} passed "
        f"({on_ours} of them on ContextForgeSession), {failed} failed, {skipped} skipped, "
        f"{deselected} deselected"
    )
    return 0 if code == 0 and failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
