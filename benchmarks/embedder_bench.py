"""Embedder benchmark: latency, cold start, memory and sizes per provider (figures, not tests).

    .venv/bin/python benchmarks/embedder_bench.py            # both providers, after `make model`

Each provider is measured in fresh child processes on one onnxruntime thread: cold start
(interpreter start → imports → model load → first query, timed inside the child and as wall
time from the parent), query latency p50/p95 over short EN/FR queries, a batch of 32 passages,
and the child's peak RSS. Sizes come from the model manifests and ``build/layer/*/haki/layer.json``.
Writes ``benchmarks/results/embedder.json``.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "build" / "models"
RESULTS = ROOT / "benchmarks" / "results" / "embedder.json"
PROVIDERS = ("e5-small-multilingual", "minilm-l6")
TARGETS = {
    "e5-small-multilingual": {"query_p50_ms": 12.0, "cold_start_s": 0.8},
    "minilm-l6": {"query_p50_ms": 3.0},
}

# The child starts its clock before any import, so "cold" covers imports + load + first query.
CHILD = """
import time
start = time.perf_counter()
import json, resource, sys
from pathlib import Path
from haki.embedding import Embedder
from haki.settings import Settings
provider, model_dir, mode = sys.argv[1:4]
texts = json.loads(sys.stdin.read())
embedder = Embedder(provider, Path(model_dir), threads=1)
embedder.embed_query(texts[0])
cold = time.perf_counter() - start
out = {"cold_s": cold}
if mode == "full":
    queries = texts * (200 // len(texts) + 1)
    for q in queries[:20]:
        embedder.embed_query(q)
    lat, cpu = [], []
    for q in queries[:200]:
        t, c = time.perf_counter(), time.process_time()
        embedder.embed_query(q)
        lat.append(time.perf_counter() - t); cpu.append(time.process_time() - c)
    batch = texts[:32]
    bt = []
    for _ in range(15):
        t = time.perf_counter(); embedder.embed_passages(batch); bt.append(time.perf_counter() - t)
    out.update(query_s=lat, query_cpu_s=cpu, batch_s=bt,
               peak_rss_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
print(json.dumps(out))
"""


def texts() -> list[str]:
    doc = json.loads((ROOT / "tests/data/translation_pairs.json").read_text(encoding="utf-8"))
    return [t for p in doc["pairs"] for t in (p["en"], p["fr"])]


def run_child(provider: str, mode: str, corpus: list[str]) -> tuple[dict, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAKI_")}
    started = time.perf_counter()
    child = subprocess.run(
        [sys.executable, "-c", CHILD, provider, str(MODELS), mode],
        input=json.dumps(corpus), capture_output=True, text=True, check=True, env=env,
    )
    return json.loads(child.stdout), time.perf_counter() - started


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def layer_sizes() -> dict[str, dict]:
    out = {}
    for info_path in sorted((ROOT / "build" / "layer").glob("*/haki/layer.json")):
        info = json.loads(info_path.read_text())
        out[info["arch"]] = {
            "providers": info["providers"],
            "unzipped_mib": round(info["unzipped_bytes"] / 2**20, 1),
            "wheels_mib": round(info["wheels_bytes"] / 2**20, 1),
            "models_mib": round(info["models_bytes"] / 2**20, 1),
        }
    return out


def measure(provider: str, cold_runs: int, corpus: list[str]) -> dict:
    manifest = json.loads((MODELS / provider / "manifest.json").read_text(encoding="utf-8"))
    full, _ = run_child(provider, "full", corpus)
    colds = [run_child(provider, "cold", corpus) for _ in range(cold_runs)]
    ms = [s * 1e3 for s in full["query_s"]]
    batch_ms = [s * 1e3 for s in full["batch_s"]]
    return {
        "query_p50_ms": round(pct(ms, 0.5), 2),
        "query_p95_ms": round(pct(ms, 0.95), 2),
        # CPU time of the same queries: what the machine's other load cannot inflate.
        "query_cpu_p50_ms": round(pct([s * 1e3 for s in full["query_cpu_s"]], 0.5), 2),
        "batch32_p50_ms": round(pct(batch_ms, 0.5), 1),
        "batch32_per_text_ms": round(pct(batch_ms, 0.5) / 32, 2),
        "cold_start_s": round(statistics.median(c[0]["cold_s"] for c in colds), 3),
        "cold_start_wall_s": round(statistics.median(c[1] for c in colds), 3),
        "peak_rss_mib": round(full["peak_rss_mib"], 1),
        "model_mib": round(manifest["files"]["model.onnx"]["bytes"] / 2**20, 1),
        "tokenizer_mib": round(manifest["files"]["tokenizer.json"]["bytes"] / 2**20, 1),
        "targets": TARGETS.get(provider, {}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--providers", nargs="+", default=list(PROVIDERS))
    parser.add_argument("--cold-runs", type=int, default=7)
    args = parser.parse_args()
    corpus = texts()
    results = {p: measure(p, args.cold_runs, corpus) for p in args.providers}
    report = {
        "machine": {"cpus": os.cpu_count(), "load_avg_1min_at_end": os.getloadavg()[0]},
        "threads": 1,
        "providers": results,
        "layers": layer_sizes(),
    }
    print(
        "| provider | query p50 / p95 ms (CPU p50) | batch 32 ms (per text) | cold start s (wall) "
        "| peak RSS MiB | model + tokenizer MiB |"
    )
    print("|---|---|---|---|---|---|")
    for name, r in results.items():
        print(
            f"| {name} | {r['query_p50_ms']} / {r['query_p95_ms']} ({r['query_cpu_p50_ms']}) "
            f"| {r['batch32_p50_ms']} ({r['batch32_per_text_ms']}) "
            f"| {r['cold_start_s']} ({r['cold_start_wall_s']}) | {r['peak_rss_mib']} "
            f"| {r['model_mib']} + {r['tokenizer_mib']} |"
        )
    for arch, layer in report["layers"].items():
        print(f"layer {arch}: {layer}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
