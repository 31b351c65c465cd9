"""Load test of the local API: concurrent clients calling ``POST /v1/context`` for a while.

    python -m benchmarks.load                        # 4 clients x 60 s (make load)
    python -m benchmarks.load --clients 2 --seconds 10

Starts ``haki serve`` (demo data, one worker per core) on a scratch data folder under
``build/``, or uses ``--url`` / ``--key`` of a running one — loopback only: this is a tool for
one's own machine, not for someone else's server. Each client keeps one HTTP connection and
sends the demo questions in turn as fast as answers come back; the server it starts runs with
its query-embedding cache off (``HAKI_EMBED_QUERY_CACHE_SIZE=0``), so every call embeds its
question, as a question never asked before would (``--query-cache`` keeps the cache: the six
questions then hit it after their first round). Prints, and writes to
``benchmarks/results/load.json``: calls, errors (any status but 200, or a transport error),
calls/s, p50 / p95 / p99 latency as the client sees it, for 1 client and for N.
"""

import argparse
import http.client
import json
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from haki_local import launch
from haki_local.cli.serve import is_loopback
from haki_local.demo import DEMO_PROJECT
from haki_local.environment import SOURCE_ROOT

RESULTS = SOURCE_ROOT / "benchmarks" / "results" / "load.json"
QUESTIONS = (
    ("user-marie", "Comment contacter Marie au sujet de sa facture ?"),
    ("user-marie", "Where does Marie live and what plan is she on?"),
    ("user-john", "Who should receive the SSO incident report?"),
    ("user-john", "How many seats does John's company have?"),
    ("user-amelie", "Quand faut-il envoyer l'export CSV ?"),
)


def run_clients(url: str, key: str, clients: int, seconds: float) -> dict[str, Any]:
    """``clients`` threads, each with its own connection, for ``seconds``."""
    target = urlsplit(url)
    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors: list[str] = []
    barrier = threading.Barrier(clients + 1)
    stop_at = [0.0]

    def client(index: int) -> None:
        conn = http.client.HTTPConnection(target.hostname or "127.0.0.1", target.port, timeout=60)
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        barrier.wait()
        n = index
        while time.perf_counter() < stop_at[0]:
            subject, question = QUESTIONS[n % len(QUESTIONS)]
            n += clients
            body = json.dumps({"project_id": DEMO_PROJECT, "subject_id": subject,
                               "query": question, "purpose": "load"})
            started = time.perf_counter()
            try:
                conn.request("POST", "/v1/context", body=body, headers=headers)
                response = conn.getresponse()
                response.read()
                if response.status != 200:
                    errors.append(f"HTTP {response.status}")
            except (OSError, http.client.HTTPException) as exc:
                errors.append(type(exc).__name__)
                conn.close()
                conn = http.client.HTTPConnection(target.hostname or "127.0.0.1", target.port,
                                                  timeout=60)
                continue
            latencies[index].append((time.perf_counter() - started) * 1000.0)
        conn.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    stop_at[0] = time.perf_counter() + seconds
    barrier.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    merged = np.asarray([x for lat in latencies for x in lat])
    p50, p95, p99 = (np.percentile(merged, [50, 95, 99]) if merged.size else (0.0, 0.0, 0.0))
    return {"clients": clients, "seconds": round(wall, 2), "calls": int(merged.size),
            "errors": len(errors), "error_kinds": sorted(set(errors)),
            "calls_per_s": round(merged.size / wall, 1) if wall else 0.0,
            "p50_ms": round(float(p50), 2), "p95_ms": round(float(p95), 2),
            "p99_ms": round(float(p99), 2)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--url", help="a running local API (default: start one)")
    parser.add_argument("--key", help="its API key (with --url)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--query-cache", action="store_true",
                        help="keep the server's query-embedding cache on (figures then "
                             "include cache hits)")
    args = parser.parse_args(argv)
    if args.url and not args.key:
        parser.error("--url needs --key")
    host = urlsplit(args.url).hostname if args.url else "127.0.0.1"
    if not is_loopback(host or ""):
        parser.error(f"{host} is not a loopback address: the load test only targets this "
                     "machine")
    scratch = None
    api = None
    if args.url:
        url, key = args.url, args.key
    else:
        build = SOURCE_ROOT / "build"
        build.mkdir(exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix="load-", dir=build))
        api = launch.start(scratch, settings=None if args.query_cache
                           else {"HAKI_EMBED_QUERY_CACHE_SIZE": "0"})
        url, key = api.url, api.key
    try:
        workers = next((line for line in api.lines if line.startswith("workers:")),
                       "workers: ?") if api else "workers: (external server)"
        runs = [run_clients(url, key, 1, args.seconds / 2),
                run_clients(url, key, args.clients, args.seconds)]
    finally:
        if api is not None:
            launch.stop(api)
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    report = {"url": url, "server": workers,
              "query_cache": ("the external server's setting" if args.url
                              else "on" if args.query_cache else "off (cold cache)"),
              "runs": runs,
              "scaling": round(runs[1]["calls_per_s"] / runs[0]["calls_per_s"], 2)
              if runs[0]["calls_per_s"] else None}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    for run in runs:
        print(f"{run['clients']} client(s), {run['seconds']} s: {run['calls']} calls, "
              f"{run['errors']} errors, {run['calls_per_s']} calls/s, p50 {run['p50_ms']} / "
              f"p95 {run['p95_ms']} / p99 {run['p99_ms']} ms")
    print(f"{workers}; throughput {args.clients} clients / 1 client: {report['scaling']}x; "
          f"written to {args.out}")
    return 1 if any(run["errors"] for run in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
