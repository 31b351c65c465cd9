"""The context call's trace write with 0 and with >= 10M stored decisions (docs/scaling.md).

    python -m benchmarks.trace_write [--calls 90000] [--writes 400]

Two scratch databases on the benchmark server: one empty, one loaded with ``--calls`` synthetic
calls of 120 decisions each (server-side INSERT ... SELECT, spread over the 30 day partitions
before today; 90,000 calls = 10.8M decisions). Then ``--writes`` trace writes
(``write_trace``: the real single INSERT of the call and its trace, 120 decisions, as the
runtime role acting for a key, each in its own transaction, committed), alternating between
the two databases so that both see the same machine load. Printed and recorded
(``benchmarks/results/trace_write.json``): p50 / p95 per database, and the p50 ratio.
"""

import argparse
import json
import statistics
import time
import uuid

from benchmarks.server import start_bench_server
from haki.assembler.trace import new_trace_id, write_trace
from haki.db import Database, Role
from haki.db.connection import acting_for, connect
from haki.models import ContextPacket, ContextRequest, ContextResponse, TraceDecision
from haki_local.admin import tenant_keys
from haki_local.environment import SOURCE_ROOT
from haki_local.evaluation import scratch_database

RESULTS = SOURCE_ROOT / "benchmarks" / "results" / "trace_write.json"
DECISIONS = 120

LOAD_SQL = """
INSERT INTO context_calls (trace_id, project_id, subject_id, query, budget_tokens, packet,
    token_count, status, facts_served, episodes_served, candidates, embed_ms, retrieval_ms,
    latency_ms, created_at)
SELECT gen_random_uuid(), %(project)s, 's' || (g %% 50), 'synthetic query', 800,
       '{"facts": [], "episodes": [], "warnings": [], "status": "ok", "empty_reason": null}',
       700, 'ok', 10, 2, 120, 5, 20, 25,
       date_trunc('day', now()) - interval '30 days' + (g * %(step)s) * interval '1 second'
FROM generate_series(1, %(calls)s) AS g
"""

LOAD_TRACES_SQL = """
INSERT INTO context_traces
SELECT c.trace_id, c.created_at, c.project_id,
       (SELECT array_agg(i) FROM generate_series(0, 119) AS i),
       (SELECT array_agg(gen_random_uuid()) FROM generate_series(1, 110))
           || array_fill(NULL::uuid, ARRAY[10]),
       array_fill(NULL::uuid, ARRAY[110])
           || (SELECT array_agg(gen_random_uuid()) FROM generate_series(1, 10)),
       array_fill(1::smallint, ARRAY[12]) || array_fill(2::smallint, ARRAY[108]),
       array_fill(1::smallint, ARRAY[12]) || array_fill(5::smallint, ARRAY[108]),
       (SELECT array_agg(i) FROM generate_series(1, 120) AS i),
       (SELECT array_agg(random()::real) FROM generate_series(1, 120)),
       (SELECT array_agg(random()::real) FROM generate_series(1, 120)),
       array_fill(NULL::real, ARRAY[120]),
       (SELECT array_agg(random()::real) FROM generate_series(1, 120)),
       array_fill(40, ARRAY[120]), array_fill(false, ARRAY[120]),
       (SELECT array_agg(i) FROM generate_series(1, 120) AS i),
       array_fill(NULL::int, ARRAY[120]), array_fill(NULL::uuid, ARRAY[120])
FROM context_calls AS c WHERE c.project_id = %(project)s
"""


def _decisions() -> list[TraceDecision]:
    return [TraceDecision(
        ordinal=i, fact_id=uuid.uuid4() if i < 110 else None,
        event_id=None if i < 110 else uuid.uuid4(),
        action="included" if i < 12 else "excluded",
        reason_code="top_score" if i < 12 else "over_budget", rank=i + 1, score=0.5,
        similarity=0.8, text_rank=None, tokens=40, vector_rank=i + 1)
        for i in range(DECISIONS)]


def _write_ms(db: Database, project: str) -> float:
    request = ContextRequest(project_id=project, subject_id="s", query="what matters",
                             purpose="bench", budget_tokens=800)
    response = ContextResponse(
        packet=ContextPacket(facts=[], episodes=[], warnings=[], status="ok",
                             empty_reason=None),
        token_count=0, trace_id=new_trace_id())
    decisions = _decisions()
    started = time.perf_counter()
    with db.transaction(project) as conn:
        write_trace(conn, request, response, decisions,
                    timings_ms={"embed": 1.0, "retrieval": 2.0, "total": 3.0})
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=90_000)
    parser.add_argument("--writes", type=int, default=400)
    args = parser.parse_args()
    server = start_bench_server()
    with scratch_database(server) as empty_urls, scratch_database(server) as full_urls:
        project = "flat-write"
        handles, keys = {}, {}
        for name, urls in (("empty", empty_urls), ("loaded", full_urls)):
            keys[name] = tenant_keys(Database(urls[Role.OWNER]), [project], org_id="bench",
                                     label="flat")[project]
            handles[name] = Database(urls[Role.APP])
        with connect(full_urls[Role.OWNER]) as owner:
            owner.execute("SELECT haki_trace_partitions(7, 36500, current_date - 31)")
            started = time.perf_counter()
            owner.execute(LOAD_SQL, {"project": project, "calls": args.calls,
                                     "step": 30 * 86400 // args.calls})
            owner.execute(LOAD_TRACES_SQL, {"project": project})
            owner.commit()
            load_s = time.perf_counter() - started
            owner.autocommit = True
            owner.execute("VACUUM ANALYZE context_calls, context_traces")
            stored = owner.execute(
                "SELECT count(*), coalesce(sum(cardinality(ordinals)), 0) FROM context_traces"
            ).fetchone()
        assert stored is not None
        samples: dict[str, list[float]] = {"empty": [], "loaded": []}
        for i in range(args.writes * 2 + 40):
            name = "empty" if i % 2 == 0 else "loaded"
            with acting_for(keys[name]):
                ms = _write_ms(handles[name], project)
            if i >= 40:  # the first 20 writes of each warm the caches and plans
                samples[name].append(ms)
        for db in handles.values():
            db.close()
    result: dict[str, object] = {
        "decisions_per_write": DECISIONS,
        "stored_trace_rows": stored[0],
        "stored_decisions": stored[1],
        "load_seconds": round(load_s, 1),
        "writes_each": args.writes,
    }
    p50: dict[str, float] = {}
    for name, values in samples.items():
        ordered = sorted(values)
        p50[name] = round(statistics.median(ordered), 3)
        result[f"{name}_p50_ms"] = p50[name]
        result[f"{name}_p95_ms"] = round(ordered[int(0.95 * (len(ordered) - 1))], 3)
    result["p50_ratio_loaded_over_empty"] = round(p50["loaded"] / p50["empty"], 3)
    for name, value in result.items():
        print(f"{name:32s} {value}")
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
