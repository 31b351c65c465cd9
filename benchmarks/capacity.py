"""Per context call: database CPU, WAL, rows and bytes written (docs/scaling.md, §2).

    python -m benchmarks.capacity [--calls 300]

On a scratch database of the benchmark server, seeded as ``benchmarks.trace_storage`` (3,000
facts, 40 episodes, ~120 decisions a call): ``--calls`` real context calls (``assemble``, the
runtime role acting for a key, one connection). Measured around the run:
- database CPU: user + system time of the connection's server backend (``/proc/<pid>/stat``:
  the embedded server runs on this machine), per call;
- WAL: ``pg_current_wal_lsn()`` delta, per call (full-page images included: a checkpoint is
  forced first, so this is the steady-state cost just after a checkpoint, an upper bound);
- rows written (2: the call and its trace row) and bytes (benchmarks/trace_storage.py);
- connections: one per concurrently executing call, held for the call's transaction.
Recorded in ``benchmarks/results/capacity.json``.
"""

import argparse
import dataclasses
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any, LiteralString

import numpy as np
import psycopg

from benchmarks.measure import precomputed
from benchmarks.scratch import scratch_tenant
from benchmarks.trace_storage import WORDS, _unit, seed
from haki.assembler.assemble import assemble
from haki.assembler.config import RetrievalConfig
from haki.db import Role
from haki.db.connection import acting_for
from haki.models import ContextRequest
from haki.settings import Settings
from haki_local.environment import SOURCE_ROOT

RESULTS = SOURCE_ROOT / "benchmarks" / "results" / "capacity.json"
TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    rng = np.random.default_rng(21)
    seeded = scratch_tenant("cap", lambda url, project: seed(url, project, rng))
    with seeded as (tenant, centre):
        project, urls, app_db = tenant.project, tenant.urls, tenant.app_db
        config = dataclasses.replace(RetrievalConfig.from_settings(Settings()), vector_top_k=76)
        requests = [(ContextRequest(project_id=project, subject_id="s",
                                    query=" ".join(rng.choice(WORDS, 4)) + f" {i}",
                                    purpose="answer", budget_tokens=800),
                     _normed(centre + 0.7 * _unit(rng)))
                    for i in range(args.calls + 20)]
        with acting_for(tenant.key):
            for request, vector in requests[:20]:  # warm: plans, caches
                assemble(request, precomputed(vector), db=app_db, config=config)
            with app_db.transaction(project) as conn:
                pid = _value(conn, "SELECT pg_backend_pid()")
            with psycopg.connect(urls[Role.OWNER], autocommit=True) as su:
                su.execute("CHECKPOINT")
                lsn0 = _value(su, "SELECT pg_current_wal_lsn()")
            cpu0, wall0 = _cpu_seconds(pid), time.perf_counter()
            decisions, call_ms = [], []
            for request, vector in requests[20:]:
                t = time.perf_counter()
                assembly = assemble(request, precomputed(vector), db=app_db, config=config)
                call_ms.append((time.perf_counter() - t) * 1000)
                decisions.append(assembly.candidates)
            cpu1, wall1 = _cpu_seconds(pid), time.perf_counter()
            with psycopg.connect(urls[Role.OWNER], autocommit=True) as su:
                wal = _value(su, "SELECT pg_current_wal_lsn() - %s::pg_lsn", (lsn0,))
    cpu_ms = (cpu1 - cpu0) * 1000 / args.calls
    result = {
        "calls": args.calls,
        "decisions_per_call_median": statistics.median(decisions),
        "db_cpu_ms_per_call": round(cpu_ms, 3),
        "calls_per_s_per_db_vcpu": round(1000 / cpu_ms, 1) if cpu_ms else None,
        "wal_bytes_per_call": round(float(wal) / args.calls),
        "call_p50_ms_client_side": round(statistics.median(call_ms), 2),
        "wall_calls_per_s_one_connection": round(args.calls / (wall1 - wall0), 1),
        "rows_written_per_call": 2,
    }
    for name, value in result.items():
        print(f"{name:36s} {value}")
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")


def _value(conn: psycopg.Connection, query: LiteralString, params: tuple[object, ...] = ()
           ) -> Any:
    """The one value of a one-row statement."""
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return row[0]


def _normed(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


if __name__ == "__main__":
    main()
