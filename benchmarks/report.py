"""Turns a run's results into results.json, results.md and latency.png."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

# (key, label, True when higher is better)
RATIO_METRICS: list[tuple[str, str, bool]] = [
    ("query_p50_ms", "query p50", False),
    ("query_p99_ms", "query p99", False),
    ("qps_2", "2-task qps", True),
    ("ingest_per_s", "ingest/s", True),
    ("save_p50_ms", "save p50", False),
    ("save_p99_ms", "save p99", False),
    ("cold_total_ms", "cold open+query", False),
    ("rss_delta_mb", "peak RSS Δ", False),
    ("disk_mb", "disk", False),
]
ABSOLUTE_METRICS: list[tuple[str, str]] = [
    ("query_p50_ms", "query p50 ms"),
    ("query_p99_ms", "query p99 ms"),
    ("qps_1", "qps 1 task"),
    ("qps_2", "qps 2 tasks"),
    ("ingest_per_s", "ingest entries/s"),
    ("save_p50_ms", "save p50 ms"),
    ("save_p99_ms", "save p99 ms"),
    ("saves", "saves"),
    ("cold_open_ms", "cold open ms"),
    ("cold_first_query_ms", "cold 1st query ms"),
    ("rss_peak_mb", "peak RSS MB"),
    ("rss_delta_mb", "peak RSS Δ MB"),
    ("disk_mb", "disk MB"),
    ("target_recall", "target recall"),
    ("hits_per_query", "hits/query"),
    ("tokens_per_query", "tokens/query"),
]


def fmt(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if math.isnan(value):
        return "n/a"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def _sizes(results: dict[str, Any]) -> list[int]:
    return sorted({r["size"] for r in results["runs"]})


def _ok(results: dict[str, Any], size: int) -> list[dict[str, Any]]:
    return [r for r in results["runs"] if r["size"] == size and r["status"] == "ok"]


def _baseline(results: dict[str, Any], size: int) -> dict[str, Any] | None:
    name = results["meta"]["baseline"]
    return next((r for r in _ok(results, size) if r["system"] == name), None)


def ratio_table(results: dict[str, Any], size: int) -> list[str]:
    base = _baseline(results, size)
    name = results["meta"]["baseline"]
    if base is None:
        return [f"_No ratios at N = {size:,}: the baseline `{name}` did not run._"]
    header = ["system"] + [
        f"{label} {'↑' if higher else '↓'}" for _, label, higher in RATIO_METRICS
    ]
    rows = []
    for run in _ok(results, size):
        cells = [run["system"]]
        for key, _, _ in RATIO_METRICS:
            value, ref = run.get(key), base.get(key)
            cells.append(f"{value / ref:.2f}×" if value is not None and ref else "n/a")
        rows.append(cells)
    return _table(header, rows)


def ratio_summary(results: dict[str, Any]) -> str:
    lines = []
    for size in _sizes(results):
        lines += [
            f"\nN = {size:,}: system ÷ {results['meta']['baseline']} (↓ lower is better, ↑ higher is better)"
        ]
        lines += ratio_table(results, size)
    return "\n".join(lines)


def markdown(results: dict[str, Any]) -> str:
    meta = results["meta"]
    versions = ", ".join(f"{k} {v}" for k, v in meta["versions"].items() if v)
    lines = [
        "# contextforge and its peers",
        "",
        f"`{meta['command']}` on {meta['date_utc']}, {meta['cpus']} CPUs, {meta['platform']}, Python {meta['python']}.",
        (
            f"Versions: {versions}. contextforge build: {meta['contextforge_build']}. "
            f"Peer token counter: {meta['token_counter']}."
        ),
        "",
        (
            f"Ratios are each system's number divided by `{meta['baseline']}`'s from the same run: "
            "↓ marks metrics where lower is better (a ratio above 1 means slower or bigger than "
            "the baseline), ↑ where higher is better. Read the ratios, not the absolute numbers: "
            "the machine is shared and noisy."
        ),
    ]
    for size in _sizes(results):
        ok = _ok(results, size)
        lines += ["", f"## N = {size:,}", "", f"### Ratios to {meta['baseline']}", ""]
        lines += ratio_table(results, size)
        lines += ["", "### Measured", ""]
        header = ["system"] + [label for _, label in ABSOLUTE_METRICS]
        lines += _table(
            header, [[r["system"]] + [fmt(r.get(k)) for k, _ in ABSOLUTE_METRICS] for r in ok]
        )
    others = [r for r in results["runs"] if r["status"] != "ok"]
    if others:
        lines += ["", "## Skipped and failed", ""]
        for r in others:
            reason = r["reason"].replace("\n", " / ")
            lines.append(f"- **{r['system']}** at N = {r['size']:,}: {r['status']}: {reason}")
    lines += ["", "## Workload", ""]
    lines += _table(
        ["N", *next(iter(results["workloads"].values())).keys()],
        [[fmt(int(n)), *(fmt(v) for v in d.values())] for n, d in results["workloads"].items()],
    )
    return "\n".join(lines) + "\n"


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    names = list(dict.fromkeys(r["system"] for r in results["runs"] if r["status"] == "ok"))
    base_name = results["meta"]["baseline"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    for i, name in enumerate(names):
        color = f"C{i}"
        runs = sorted(
            (r for r in results["runs"] if r["system"] == name and r["status"] == "ok"),
            key=lambda r: r["size"],
        )
        sizes = [r["size"] for r in runs]
        left.plot(sizes, [r["query_p50_ms"] for r in runs], "o-", color=color, label=f"{name} p50")
        left.plot(
            sizes,
            [r["query_p99_ms"] for r in runs],
            "x--",
            color=color,
            alpha=0.6,
            label=f"{name} p99",
        )
        ratios = [
            (r["size"], r["query_p50_ms"] / b["query_p50_ms"])
            for r in runs
            if (b := _baseline(results, r["size"])) is not None
        ]
        if ratios:
            right.plot(*zip(*ratios), "o-", color=color, label=name)
    left.set(
        xscale="log",
        yscale="log",
        xlabel="entries in the store",
        ylabel="warm query latency (ms)",
        title="Query latency against store size",
    )
    right.set(
        xscale="log",
        yscale="log",
        xlabel="entries in the store",
        ylabel=f"query p50 ÷ {base_name} query p50",
        title=f"Query p50 relative to {base_name}",
    )
    right.axhline(1.0, color="grey", linewidth=0.8)
    for axis, columns in ((left, 2), (right, 1)):
        if axis.get_legend_handles_labels()[0]:
            axis.legend(fontsize=7, ncol=columns)
    for axis in (left, right):
        axis.grid(True, which="both", alpha=0.3)
        axis.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:,.0f}"))
        axis.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
    fig.suptitle(f"{results['meta']['date_utc']}, {results['meta']['cpus']} CPUs", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write(results: dict[str, Any], out: Path) -> list[Path]:
    paths = [out / "results.json", out / "results.md", out / "latency.png"]
    paths[0].write_text(json.dumps(results, indent=2) + "\n")
    paths[1].write_text(markdown(results))
    plot(results, paths[2])
    return paths
