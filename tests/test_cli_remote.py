"""The CLI against a libSQL server: ``--db`` takes its URL (it was refused as
a missing directory), and the token comes from ``CONTEXTFORGE_AUTH_TOKEN``."""

from __future__ import annotations

import json

from contextforge import ContextForgeSync

from .sqld import Sqld, sqld_fixture  # noqa: F401  (provides the `sqld` fixture)
from .test_cli import run


def test_the_cli_saves_queries_and_forgets_through_a_server(sqld: Sqld) -> None:
    def cli(*args: str) -> str:
        result = run(*args, "--db", sqld.url, env={"CONTEXTFORGE_AUTH_TOKEN": ""})
        assert result.returncode == 0, result.stderr
        return result.stdout

    saved = json.loads(cli("save", "the deploy failed: missing env var", "--scope", "p", "--json"))
    cli("save", "lunch is at noon", "--scope", "p")
    hits = json.loads(cli("query", "deploy failure", "--scope", "p", "--json"))
    assert [h["id"] for h in hits] == [saved["id"]]
    receipt = json.loads(cli("forget", "--id", str(saved["id"]), "-y", "--json"))
    assert receipt["ids"] == [saved["id"]]
    assert receipt["storage_scrubbed"] is False
    # What the server holds, read by the library itself.
    with ContextForgeSync.open(sqld.url) as cf:
        assert cf.get(saved["id"]) is None
        assert [h.content for h in cf.list(scope="p")] == ["lunch is at noon"]
