"""Turns scenario measurements into the results file: summary, targets, table and plots.

Plots use matplotlib's object API (``Figure``), rendered by the Agg canvas: no display, no
global pyplot state.
"""

import json
import math
import os
import platform
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from benchmarks.loader import BUILD_SETTINGS
from benchmarks.plans import Plan
from benchmarks.server import server_facts
from haki.assembler import RetrievalConfig
from haki.embedding import Embedder

DATA_NOTE = (
    "Synthetic data: realistic FR/EN customer-support texts with SYNTHETIC clustered unit "
    "embeddings (a few centroids per topic, not model outputs). Each question is embedded by "
    "the real embedder (its cost is in the end-to-end figures); retrieval uses the question's "
    "synthetic vector, which lives in the same space as the data."
)
_SCENARIO_100K = "100k facts, one scope"
_SCENARIO_MULTI = "1M facts over 1,000 scopes"
_SCENARIO_HARD = "hard: one subject with 5% of 1M"
_SCENARIO_1M = "1M facts, one scope"


def summarize_run(
    plan: Plan, scenarios: list[dict[str, Any]], *, superuser_url: str,
    embedder: Embedder | None, config: RetrievalConfig, wall_s: float,
) -> dict[str, Any]:
    """The results document: environment, every scenario, slope, targets and a table."""
    results: dict[str, Any] = {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "mode": plan.mode,
        "wall_s": round(wall_s, 1),
        "data": DATA_NOTE,
        "machine": {
            "cpus": os.cpu_count(),
            "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
                                / 2**30, 1),
            "platform": platform.platform(),
        },
        "server": {**server_facts(superuser_url), "index_build": BUILD_SETTINGS},
        "embedder": embedder.provider if embedder else None,
        "retrieval_config": {k: v for k, v in asdict(config).items() if k != "stopwords"},
        "scenarios": scenarios,
        "slope": slope(scenarios),
    }
    results["targets"] = targets(results)
    results["table"] = table(scenarios)
    results["cpu_table"] = cpu_table(scenarios, results["machine"]["cpus"])
    return results


def slope(scenarios: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Growth of the end-to-end latency from the smallest to the largest single scope."""
    single = sorted((s for s in scenarios if s["single_scope"]), key=lambda s: s["scope_facts"])
    if len(single) < 2:
        return None
    lo, hi = single[0], single[-1]
    p50_lo, p50_hi = lo["ours"]["e2e"]["p50"], hi["ours"]["e2e"]["p50"]
    return {
        "from": lo["name"], "to": hi["name"],
        "facts_ratio": hi["scope_facts"] / lo["scope_facts"],
        "e2e_p50_ratio": round(p50_hi / p50_lo, 2),
        "e2e_p95_ratio": round(hi["ours"]["e2e"]["p95"] / lo["ours"]["e2e"]["p95"], 2),
        "sql_p95_ratio": round(hi["ours"]["sql_only"]["p95"] / lo["ours"]["sql_only"]["p95"], 2),
        # latency ∝ facts^exponent between the two ends (0: flat, 1: linear like naive)
        "e2e_p50_exponent": round(
            math.log(p50_hi / p50_lo) / math.log(hi["scope_facts"] / lo["scope_facts"]), 3),
        "naive_e2e_p50_exponent": round(
            math.log(hi["naive"]["e2e"]["p50"] / lo["naive"]["e2e"]["p50"])
            / math.log(hi["scope_facts"] / lo["scope_facts"]), 3),
    }


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's targets that this run can check, each with the figure reached."""
    by_name = {s["name"]: s for s in results["scenarios"]}
    out: list[dict[str, Any]] = []

    def check(name: str, value: float | None, limit: float, higher_is_better: bool) -> None:
        met = value is not None and (value >= limit if higher_is_better else value <= limit)
        out.append({"target": name, "limit": limit, "value": value, "met": met})

    for scenario_name in (_SCENARIO_100K, _SCENARIO_MULTI):
        s = by_name.get(scenario_name)
        if s:
            check(f"{scenario_name}: e2e p50 ms", s["ours"]["e2e"]["p50"], 20, False)
            check(f"{scenario_name}: e2e p95 ms", s["ours"]["e2e"]["p95"], 40, False)
    # The tails: the big subject and the big scope.
    for scenario_name, limit in ((_SCENARIO_HARD, 80), (_SCENARIO_1M, 100)):
        s = by_name.get(scenario_name)
        if s:
            check(f"{scenario_name}: e2e p95 ms", s["ours"]["e2e"]["p95"], limit, False)
    s = by_name.get(_SCENARIO_100K)
    if s:
        check(f"{_SCENARIO_100K}: retrieval SQL p95 ms", s["ours"]["sql_only"]["p95"], 10, False)
        check(f"{_SCENARIO_100K}: naive/ours e2e (p50)",
              s["ratio_naive_over_ours"]["e2e_p50"], 20, True)
        check(f"{_SCENARIO_100K}: naive/ours SQL (p50)",
              s["ratio_naive_over_ours"]["sql_p50"], 50, True)
    sl = results["slope"]
    if sl and sl["facts_ratio"] >= 100:
        check("p95 at 1M one scope / p95 at 10k", sl["e2e_p95_ratio"], 2, False)
    for s in results["scenarios"]:
        check(f"{s['name']}: vector-arm recall (mean)", s["vector_recall"]["mean"], 0.95, True)
        check(f"{s['name']}: round trips per request, warm (mean)",
              s["per_call"]["request_round_trips_warm_mean"], 3, False)
    return out


def table(scenarios: list[dict[str, Any]]) -> list[str]:
    """A Markdown table of the headline figures (ms)."""
    lines = [
        "| scenario | facts in scope / table | ours e2e p50 / p95 / p99 | ours SQL p50 / p95 | "
        "naive e2e p50 / p95 | naive SQL p50 | naive/ours e2e · SQL (p50) | vector recall "
        "(pgvector defaults) | statements · round trips (assembler + beside it on the second "
        "connection; request: cold key, cached key) · trace rows per call | "
        "calls/s 1 · 2 clients |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in scenarios:
        o, n, r = s["ours"], s["naive"], s["ratio_naive_over_ours"]
        pc, tp, vr = s["per_call"], s["throughput"], s["vector_recall"]
        lines.append(
            f"| {s['name']} | {s['scope_facts']:,} / {s['dataset']['facts_in_table']:,} "
            f"| {o['e2e']['p50']:.1f} / {o['e2e']['p95']:.1f} / {o['e2e']['p99']:.1f} "
            f"| {o['sql_only']['p50']:.1f} / {o['sql_only']['p95']:.1f} "
            f"| {n['e2e']['p50']:.0f} / {n['e2e']['p95']:.0f} | {n['sql_only']['p50']:.0f} "
            f"| {r['e2e_p50']}× · {r['sql_p50']}× "
            f"| {vr['mean']:.3f} ({vr['pgvector_defaults_mean']:.2f})"
            f" | {pc['statements_mean']:.1f}+{pc['side_statements_mean']:.1f} · "
            f"{pc['round_trips_mean']:.1f}+{pc['side_round_trips_mean']:.1f} "
            f"({pc['request_round_trips_cold_mean']:.1f}, "
            f"{pc['request_round_trips_warm_mean']:.1f}) · {pc['trace_rows_mean']:.0f} "
            f"| {tp['one_client_calls_per_s']:.0f} · {tp['concurrent']['calls_per_s']:.0f} |"
        )
    return lines


def cpu_table(scenarios: list[dict[str, Any]], cores: int | None) -> list[str]:
    """A Markdown table of the CPU a call takes (ms, mean): the calling thread, the embedding
    thread and the database server, their sum, and that sum over the mean end-to-end time
    (the cores it kept busy: near the machine's ``cores``, the call waits for CPU)."""
    lines = [
        "| scenario | ours: client · embedding · database = CPU per call | ours e2e mean "
        "| cores busy | naive: CPU per call / e2e mean |",
        "|---|---|---|---|---|",
    ]

    def figure(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.1f}"

    for s in scenarios:
        o, n = s["ours"]["cpu"], s["naive"]["cpu"]
        lines.append(
            f"| {s['name']} | {o['client']:.1f} · {o['embedding']:.1f} · "
            f"{figure(o['database'])} = {figure(o['total'])} | {o['e2e_mean']:.1f} "
            f"| {figure(o['cores_busy'])} of {cores} "
            f"| {figure(n['total'])} / {n['e2e_mean']:.0f} |")
    return lines


def write_results(results: dict[str, Any], out_dir: Path) -> Path:
    """``scale.json`` (``scale-<mode>.json`` unless full) and the two PNG plots."""
    out_dir.mkdir(parents=True, exist_ok=True)
    suffix = "" if results["mode"] == "full" else f"-{results['mode']}"
    path = out_dir / f"scale{suffix}.json"
    path.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    _plot_latency_vs_facts(results, out_dir / f"latency_vs_facts{suffix}.png")
    _plot_distribution(results, out_dir / f"latency_distribution{suffix}.png")
    return path


def _plot_latency_vs_facts(results: dict[str, Any], path: Path) -> None:
    fig = Figure(figsize=(7.5, 4.8), dpi=120)  # no pyplot: rendered by the Agg canvas
    ax = fig.subplots()
    single = sorted((s for s in results["scenarios"] if s["single_scope"]),
                    key=lambda s: s["scope_facts"])
    others = [s for s in results["scenarios"] if not s["single_scope"]]
    x = [s["scope_facts"] for s in single]
    for key, label, style in (("ours", "two-phase assembler", "o-"),
                              ("naive", "naive: score every fact", "s--")):
        p50 = [s[key]["e2e"]["p50"] for s in single]
        p95 = [s[key]["e2e"]["p95"] for s in single]
        line, = ax.plot(x, p50, style, label=f"{label} (p50, one scope)")
        ax.fill_between(x, p50, p95, color=line.get_color(), alpha=0.15)
        # Scopes of a larger table, one marker each, named in the legend (their points lie
        # too close together for labels beside them); the colour says ours or naive.
        for s in others:
            ax.plot([s["dataset"]["facts_in_table"]], [s[key]["e2e"]["p50"]],
                    marker="^" if "hard" in s["name"] else "D", color=line.get_color(),
                    linestyle="none", label=f"{s['name']} (p50)" if key == "ours" else None)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("facts in the table (one scope: all of them)")
    ax.set_ylabel("end-to-end latency per call, ms (band: p50–p95)")
    ax.set_title(f"Context call latency vs memory size ({results['mode']} run, synthetic vectors)",
                 fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)


def _plot_distribution(results: dict[str, Any], path: Path) -> None:
    fig = Figure(figsize=(7.5, 4.8), dpi=120)  # no pyplot: rendered by the Agg canvas
    ax = fig.subplots()
    for index, s in enumerate(results["scenarios"]):
        for key, style in (("ours_e2e", "-"), ("naive_e2e", ":")):
            values = sorted(s["samples_ms"][key])
            if not values:
                continue
            share = [(i + 1) / len(values) for i in range(len(values))]
            who = "ours" if key == "ours_e2e" else "naive"
            ax.plot(values, share, style, color=f"C{index}", label=f"{who} · {s['name']}")
    ax.set_xscale("log")
    ax.set_xlabel("end-to-end latency per call, ms (log)")
    ax.set_ylabel("share of calls at or below")
    ax.set_title("Latency distribution (solid: assembler, dotted: naive baseline)", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path)
