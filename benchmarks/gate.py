"""The regression gate at the end of `make bench`: nothing else got worse.

    python benchmarks/gate.py                 # after make bench's runs, from benchmarks/results*
    python benchmarks/gate.py --smoke         # after make bench-smoke: only what a smoke run can say

Reads what the run wrote (run.py's results.json at 100,000 and at 1,000,000
entries, ingest.py's ingest.json, eval_locomo.py's eval_locomo.json) and checks
it against benchmarks/gate.json: speed and memory only as ratios to a peer, or
to another step, measured in the same run (this machine's absolute times move by tens of
percent between runs), and retrieval quality, which is deterministic, against
the recorded recall. Prints one line per check and exits non-zero if any fails
or if a result it needs is missing. With --smoke, results a smoke run does not
write are skipped, and only checks that hold at any size run (every query
finds its target).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BASE = "contextforge"


class Gate:
    def __init__(self, root: Path, smoke: bool) -> None:
        self.root, self.smoke = root, smoke
        self.failed = 0

    def load(self, name: str) -> Any:
        path = self.root / name
        if not path.is_file():
            if self.smoke:
                print(f"skip  {name}: not written by a smoke run")
                return None
            self.report(False, f"{name} is missing: run make bench")
            return None
        return json.loads(path.read_text(encoding="utf-8"))

    def report(self, ok: bool, line: str) -> None:
        print(f"{'ok  ' if ok else 'FAIL'}  {line}")
        self.failed += not ok

    def bound(self, what: str, value: float, check: dict[str, Any]) -> None:
        if "at_most" in check:
            ok, rule = value <= check["at_most"], f"<= {check['at_most']:g}"
        else:
            ok, rule = value >= check["at_least"], f">= {check['at_least']:g}"
        self.report(ok, f"{what}: {value:.3g} ({rule})")

    def runs(self, spec: dict[str, Any]) -> None:
        data = self.load(spec["results"])
        if data is None:
            return
        sizes = {r["size"] for r in data["runs"] if r["system"] == BASE}
        size = spec["size"] if not self.smoke else max(sizes, default=0)
        rows = {
            r["system"]: r for r in data["runs"] if r["size"] == size and r.get("status") == "ok"
        }
        ours = rows.get(BASE)
        if ours is None:
            self.report(False, f"{spec['results']}: no {BASE} run at {size:,} entries")
            return
        for check in spec["checks"]:
            peer = check.get("peer")
            if self.smoke and (peer or "per" in check):
                continue  # a ratio at a smoke size says nothing
            value = float(ours[check["metric"]])
            if peer:
                if peer not in rows:
                    self.report(False, f"{check['what']}: no {peer} run at {size:,}")
                    continue
                value /= float(rows[peer][check["metric"]])
            elif "per" in check:
                value /= float(ours[check["per"]]) * check.get("scale", 1)
            self.bound(f"{check['what']} [{size:,}]", value, check)

    def ingest(self, spec: dict[str, Any]) -> None:
        data = self.load(spec["results"])
        if data is None:
            return
        cells: dict[tuple[str, int], dict[str, Any]] = {
            (c["system"], c["batch"]): c for c in data["cells"] if c.get("status") == "ok"
        }
        for batch_key, floor in spec["against_tantivy_at_least"].items():
            batch = int(batch_key)
            ours = cells.get((BASE, batch))
            if ours is None:
                if not self.smoke:
                    self.report(False, f"ingest at {batch:,} per call: no {BASE} cell")
                continue
            if self.smoke:
                continue
            for peer, bound in (("tantivy", floor), ("sqlite_fts5", spec["against_fts5_at_least"])):
                theirs = cells.get((peer, batch))
                if theirs is None:
                    self.report(False, f"ingest at {batch:,} per call: no {peer} cell")
                    continue
                ratio = ours["entries_per_s"] / theirs["entries_per_s"]
                self.bound(
                    f"ingest at {batch:,} per call, against {peer}", ratio, {"at_least": bound}
                )
            self.ingest_memory(spec, batch, ours, cells.get(("tantivy", batch)))

    def ingest_memory(
        self,
        spec: dict[str, Any],
        batch: int,
        ours: dict[str, Any],
        theirs: dict[str, Any] | None,
    ) -> None:
        """The memory contextforge adds over the same entries (its open
        included), against what tantivy-py + sqlite3 adds (its token counter
        included)."""
        check = spec["memory_against_tantivy"]
        if theirs is None:
            return  # already reported as missing
        if check["metric"] not in ours or check["metric"] not in theirs:
            self.report(False, f"ingest memory at {batch:,} per call: no {check['metric']}")
            return
        if theirs[check["metric"]] <= 0:
            self.report(False, f"ingest memory at {batch:,} per call: tantivy's is not positive")
            return
        ratio = ours[check["metric"]] / theirs[check["metric"]]
        self.bound(f"{check['what']} at {batch:,} per call", ratio, check)

    def locomo(self, spec: dict[str, Any]) -> None:
        data = self.load(spec["results"])
        if data is None:
            return
        system = data["systems"].get(spec["system"])
        if system is None:
            self.report(False, f"{spec['results']}: no '{spec['system']}' row")
            return
        summary = system["summary"]["all"] if "all" in system.get("summary", {}) else {}
        for metric, recorded in spec["at_least"].items():
            value = summary.get(metric, system["metrics"].get(metric))
            if value is None:
                self.report(False, f"{spec['what']}: no {metric}")
                continue
            floor = recorded - spec["tolerance"]
            self.bound(f"{spec['what']}: {metric}", float(value), {"at_least": floor})


def main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--results", default=str(HERE), help="folder holding results/, results-1m/")
    p.add_argument("--gate", default=str(HERE / "gate.json"))
    p.add_argument("--smoke", action="store_true", help="after make bench-smoke")
    args = p.parse_args(argv)
    spec = json.loads(Path(args.gate).read_text(encoding="utf-8"))
    gate = Gate(Path(args.results), args.smoke)
    for run in spec["runs"]:
        gate.runs(run)
    gate.ingest(spec["ingest"])
    gate.locomo(spec["locomo"])
    print(f"{gate.failed} check(s) failed" if gate.failed else "every check passed")
    return 1 if gate.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
