"""Cold start of the context function: a fresh interpreter imports the handler module (layer
imports), then serves its first call (model load, first connection, first assembly).

    python -m benchmarks.cold_start [--runs 5]

The database is a scratch one on the benchmark server with a few facts and a key; each run is
a new process, timed from inside it (``time.perf_counter`` at the first line) and from
outside (the parent's wall clock, which adds the interpreter's own start). Medians printed and
written to ``benchmarks/results/cold_start.json``.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.server import start_bench_server
from haki.db import Database, Role
from haki_local.admin import create_key
from haki_local.environment import SOURCE_ROOT
from haki_local.evaluation import scratch_database

RESULTS = SOURCE_ROOT / "benchmarks" / "results" / "cold_start.json"

CHILD = """
import time
started = time.perf_counter()
import json, sys
import functions.context.app as app
from tests.handlers.conftest import FakeLambdaContext, api_event
imported = time.perf_counter()
body = {"project_id": "cold", "subject_id": "s", "query": "What does she prefer?",
        "purpose": "bench"}
result = app.handler(api_event("POST", "/v1/context", key=sys.argv[1], body=body),
                     FakeLambdaContext())
served = time.perf_counter()
assert result["statusCode"] == 200, result["body"]
second = time.perf_counter()
app.handler(api_event("POST", "/v1/context", key=sys.argv[1], body=body), FakeLambdaContext())
warm = time.perf_counter()
print(json.dumps({"import_s": imported - started, "first_call_s": served - imported,
                  "cold_total_s": served - started, "warm_call_s": warm - second}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    runs = []
    with scratch_database(start_bench_server()) as urls:
        owner = Database(urls[Role.OWNER])
        key = create_key(owner, org_id="bench", project_id="cold", create_project=True).key
        owner.close()
        env = {**os.environ, "HAKI_DATABASE_URL": urls[Role.APP]}
        for _ in range(args.runs):
            started = time.perf_counter()
            done = subprocess.run([sys.executable, "-c", CHILD, key], env=env, cwd=SOURCE_ROOT,
                                  capture_output=True, text=True, check=True)
            wall = time.perf_counter() - started
            line = [ln for ln in done.stdout.splitlines() if ln.startswith('{"import_s')][-1]
            runs.append({**json.loads(line), "process_wall_s": wall})
    report = {key: round(statistics.median(r[key] for r in runs), 3)
              for key in ("import_s", "first_call_s", "cold_total_s", "warm_call_s",
                          "process_wall_s")}
    report["runs"] = len(runs)
    Path(RESULTS).write_text(json.dumps(report, indent=2) + "\n")
    print(f"cold start of the context function (medians of {len(runs)} fresh processes): "
          f"imports {report['import_s']} s + first call {report['first_call_s']} s = "
          f"{report['cold_total_s']} s (process wall {report['process_wall_s']} s); "
          f"a warm call {report['warm_call_s'] * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
