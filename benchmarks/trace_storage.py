"""Bytes a context call leaves in the database (docs/scaling.md), at ~120 decisions a call.

    python -m benchmarks.trace_storage --label after [--calls 300]

On a scratch database of the benchmark server: 3,000 facts and 40 episodes in one scope, then
``--calls`` real context calls (``assemble``: fused ranking, default settings, the real trace
write). Printed and recorded (``benchmarks/results/trace_storage.json``, one entry per label):
decisions per call, and per call the heap (with TOAST) and index bytes of ``context_calls`` and
``context_traces`` — summed over every partition when the tables are partitioned — after
``VACUUM`` (free-space maps and visibility maps excluded: heap and TOAST main forks, indexes).
"""

import argparse
import dataclasses
import json
import statistics
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from benchmarks.measure import precomputed
from benchmarks.scratch import copy_rows, scratch_tenant, unit_vector_text
from haki.assembler.assemble import assemble
from haki.assembler.config import RetrievalConfig
from haki.db import Role
from haki.db.connection import acting_for
from haki.models import ContextRequest
from haki.settings import Settings
from haki_local.environment import SOURCE_ROOT

RESULTS = SOURCE_ROOT / "benchmarks" / "results" / "trace_storage.json"
WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike "
         "november oscar papa quebec romeo sierra tango uniform victor whiskey").split()

#: Heap (main fork of the table and of its TOAST table) and index bytes of a table and, when
#: it is partitioned, of every partition.
SIZES_SQL = """
WITH parts AS (
    SELECT relid FROM pg_partition_tree(%(table)s::regclass) WHERE isleaf
    UNION SELECT %(table)s::regclass WHERE NOT EXISTS (
        SELECT 1 FROM pg_partitioned_table WHERE partrelid = %(table)s::regclass)
)
SELECT coalesce(sum(pg_relation_size(c.oid)
                    + coalesce(pg_relation_size(c.reltoastrelid), 0)
                    + coalesce((SELECT sum(pg_relation_size(i.indexrelid))
                                FROM pg_index AS i WHERE i.indrelid = c.reltoastrelid), 0)),
                0)::bigint,
       coalesce(sum((SELECT coalesce(sum(pg_relation_size(i.indexrelid)), 0)
                     FROM pg_index AS i WHERE i.indrelid = c.oid)), 0)::bigint
FROM parts JOIN pg_class AS c ON c.oid = parts.relid
"""


def _unit(rng: np.random.Generator) -> np.ndarray:
    v = rng.standard_normal(384).astype(np.float32)
    return v / np.linalg.norm(v)


def seed(owner_url: str, project: str, rng: np.random.Generator) -> np.ndarray:
    """3,000 facts clustered around one direction (so a query meets many), 40 episodes."""
    centre = _unit(rng)

    def rows(count: int, words: int, kind: str,
             value: Callable[[int, str], str]) -> Iterator[tuple[object, ...]]:
        """``count`` rows near ``centre``, each ``value(i, text)`` of ``words`` words."""
        for i in range(count):
            v = centre + 0.9 * _unit(rng)
            text = " ".join(rng.choice(WORDS, words))
            yield project, "s", kind, value(i, text), unit_vector_text(v)

    with psycopg.connect(owner_url, autocommit=True) as conn:
        register_vector(conn)
        copy_rows(conn,
                  "COPY facts (project_id, subject_id, predicate, value, embedding) FROM STDIN",
                  rows(3000, 12, "note", lambda i, text: json.dumps(f"fact {i}: {text}")))
        copy_rows(conn, "COPY events (project_id, subject_id, kind, payload, embedding) FROM STDIN",
                  rows(40, 20, "conversation.message",
                       lambda i, text: json.dumps({"text": f"episode {i}: {text}"})))
        conn.execute("ANALYZE")
    return centre


def measure(calls: int) -> dict[str, float]:
    rng = np.random.default_rng(12)
    seeded = scratch_tenant("bytes", lambda url, project: seed(url, project, rng))
    with seeded as (tenant, centre):
        # ~120 decisions a call: 76 from the vector arm, the text arm's and the episodes'.
        config = dataclasses.replace(RetrievalConfig.from_settings(Settings()),
                                     vector_top_k=76)
        decisions = []
        with acting_for(tenant.key):
            for i in range(calls):
                q = centre + 0.7 * _unit(rng)
                request = ContextRequest(project_id=tenant.project, subject_id="s",
                                         query=" ".join(rng.choice(WORDS, 4)) + f" {i}",
                                         purpose="answer the user", budget_tokens=800)
                assembly = assemble(request, precomputed(q / np.linalg.norm(q)),
                                    db=tenant.app_db, config=config)
                decisions.append(assembly.candidates)
        with psycopg.connect(tenant.urls[Role.OWNER], autocommit=True) as conn:
            conn.execute("VACUUM context_calls, context_traces")
            sizes = {}
            for table in ("context_calls", "context_traces"):
                row = conn.execute(SIZES_SQL, {"table": table}).fetchone()
                assert row is not None
                heap, index = row
                sizes[table] = (heap / calls, index / calls)
    calls_heap, calls_index = sizes["context_calls"]
    traces_heap, traces_index = sizes["context_traces"]
    return {
        "calls": calls,
        "decisions_per_call_median": statistics.median(decisions),
        "context_calls_heap_bytes_per_call": round(calls_heap),
        "context_calls_index_bytes_per_call": round(calls_index),
        "context_traces_heap_bytes_per_call": round(traces_heap),
        "context_traces_index_bytes_per_call": round(traces_index),
        "total_bytes_per_call": round(calls_heap + calls_index + traces_heap + traces_index),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", required=True, help="the entry to record (before, after)")
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    result = measure(args.calls)
    for name, value in result.items():
        print(f"{name:40s} {value}")
    recorded = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    recorded[args.label] = result
    if "before" in recorded and "after" in recorded:
        recorded["after_over_before"] = round(
            recorded["after"]["total_bytes_per_call"]
            / recorded["before"]["total_bytes_per_call"], 3)
        print(f"after / before: {recorded['after_over_before']}")
    Path(RESULTS).write_text(json.dumps(recorded, indent=2) + "\n")


if __name__ == "__main__":
    main()
