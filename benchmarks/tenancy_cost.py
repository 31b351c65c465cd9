"""What binding the tenant to the key costs (migration 0013), measured inside the server so
that network round trips (the same either way) do not drown it.

    python -m benchmarks.tenancy_cost

On a scratch database of the embedded server: 2,000 facts in one scope.
- ``haki_tenant()``, the policies' lookup of the key's project: 10,000 calls in one statement,
  per call;
- a scoped read's execution time (``EXPLAIN ANALYZE``) as the owner (policy ``true``) and as
  the runtime role acting for a key, interleaved, medians.
A context call meets the policy on about ten table references (each arm, the join back, the
conflict check, episodes, the trace INSERT of two tables) plus the scope check of its opening:
eleven lookups, printed as the per-call cost.
"""

import json
import statistics

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from benchmarks.scratch import copy_rows, scratch_tenant, unit_vector_text
from haki.db.connection import acting_for

REPEATS = 300
LOOKUPS_PER_CALL = 11


def _seed(owner_url: str, project: str) -> None:
    rng = np.random.default_rng(7)
    with psycopg.connect(owner_url, autocommit=True) as conn:
        register_vector(conn)
        copy_rows(conn,
                  "COPY facts (project_id, subject_id, predicate, value, embedding) FROM STDIN",
                  ((project, "s", "note", f'"fact {i}"',
                    unit_vector_text(rng.standard_normal(384).astype(np.float32)))
                   for i in range(2000)))
        conn.execute("ANALYZE facts")


def _execution_ms(conn: psycopg.Connection, sql: str, params: tuple[object, ...]) -> float:
    plan = conn.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", params).fetchone()
    assert plan is not None
    document = plan[0] if isinstance(plan[0], list) else json.loads(plan[0])
    return float(document[0]["Execution Time"])


def main() -> None:
    with scratch_tenant("cost", _seed) as (tenant, _):
        project, owner_db, app_db = tenant.project, tenant.owner_db, tenant.app_db
        read = "SELECT count(*) FROM facts WHERE project_id = %s AND subject_id = 's'"
        owner_ms, app_ms, lookup_us = [], [], []
        with acting_for(tenant.key):
            for _ in range(REPEATS):
                with owner_db.transaction() as conn:
                    owner_ms.append(_execution_ms(conn, read, (project,)))
                with app_db.transaction(project) as conn:
                    app_ms.append(_execution_ms(conn, read, (project,)))
            for _ in range(20):
                with app_db.transaction(project) as conn:
                    total = _execution_ms(
                        conn, "SELECT count(haki_tenant()) FROM generate_series(1, 10000)", ())
                    lookup_us.append(total * 1000 / 10_000)
    lookup = statistics.median(lookup_us)
    owner_med, app_med = statistics.median(owner_ms), statistics.median(app_ms)
    print(f"haki_tenant(): {lookup:.2f} us a call (median of 20 x 10,000)")
    print(f"scoped read of 2,000 facts, server execution: owner {owner_med * 1000:.0f} us, "
          f"runtime role acting for a key {app_med * 1000:.0f} us "
          f"(medians of {REPEATS}, interleaved)")
    print(f"per context call: {LOOKUPS_PER_CALL} lookups = "
          f"{LOOKUPS_PER_CALL * lookup / 1000:.3f} ms")


if __name__ == "__main__":
    main()
