"""Latency of ``POST /v1/context`` over local HTTP, as a client sees it.

Run ``haki serve`` first, then: ``python scripts/local_http_latency.py --key hk_...``
(default URL http://127.0.0.1:8787, 200 calls over the demo subjects, sequential, after 10
warm-up calls). Prints p50 / p95 / p99 of the round trip and of the server-side total.
"""

import argparse
import json
import statistics
import time
import urllib.request

QUERIES = [
    ("user-marie", "Comment contacter Marie au sujet de sa facture ?"),
    ("user-marie", "Where does Marie live and what plan is she on?"),
    ("user-john", "Who should receive the SSO incident report?"),
    ("user-john", "How many seats does John's company have?"),
    ("user-amelie", "Quand faut-il envoyer l'export CSV ?"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8787")
    parser.add_argument("--key", required=True)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    args = parser.parse_args()

    def call(i: int) -> float:
        subject, query = QUERIES[i % len(QUERIES)]
        body = json.dumps({"project_id": "acme-support", "subject_id": subject,
                           "query": query, "purpose": "latency"}).encode()
        request = urllib.request.Request(
            f"{args.url}/v1/context", data=body, method="POST",
            headers={"Authorization": f"Bearer {args.key}", "Content-Type": "application/json"})
        started = time.perf_counter()
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()
        return (time.perf_counter() - started) * 1000

    for i in range(args.warmup):
        call(i)
    samples = sorted(call(i) for i in range(args.calls))
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    print(f"{args.calls} sequential POST /v1/context over HTTP: "
          f"p50 {cuts[49]:.1f} ms, p95 {cuts[94]:.1f} ms, p99 {cuts[98]:.1f} ms, "
          f"mean {statistics.fmean(samples):.1f} ms")


if __name__ == "__main__":
    main()
