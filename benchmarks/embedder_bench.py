"""Embedder benchmark: query latency (cold cache), batch cost, cold start, memory and sizes per
provider (figures, not tests).

    .venv/bin/python benchmarks/embedder_bench.py                       # after `make model`
    .venv/bin/python benchmarks/embedder_bench.py --before DIR          # before/after
    .venv/bin/python benchmarks/embedder_bench.py --threads 2           # 2 intra-op threads

Every figure is a **cold-cache** figure: the children build their embedder with the query
cache off (``query_cache_size=0``), so each query runs the tokenizer and the model; cache hits
are never timed. Queries are the typical agent questions of ``embedder_questions.txt`` (24
EN/FR questions of 54-72 characters, 18.8 tokens on average with the prefix), one at a time.

Each provider is measured in fresh child processes on ``--threads`` onnxruntime threads (default
1): cold start (interpreter start → imports → model load → first query, timed inside the child
and as wall time from the parent), query p50/p95 (wall and CPU time of the calling thread),
a batch of 32 passages, and the child's peak RSS. With ``--before DIR`` (a models folder built
by an earlier recipe, e.g. from a ``git worktree`` of the previous commit) each timing child
loads both folders and runs every question on both, in a shuffled order, before the next
(``--rounds`` children); cold-start children alternate before, after, before … So the noise of
a shared machine falls on both alike; the table gives both and the ratios of the medians (peak
RSS is then the child's with both models). Writes ``benchmarks/results/embedder.json``.
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
    "e5-small-multilingual": {"query_p50_ms": 5.0, "cold_start_s": 0.8},
    "minilm-l6": {"query_p50_ms": 3.0},
}

# The child starts its clock before any import, so "cold" covers imports + load + first query.
CHILD = """
import time
start = time.perf_counter()
import json, random, resource, sys
from pathlib import Path
from haki.embedding import Embedder
provider, mode, threads = sys.argv[1:4]
folders = sys.argv[4:]
data = json.loads(sys.stdin.read())
queries, passages = data["queries"], data["passages"]
embedders = [Embedder(provider, Path(f), threads=int(threads), query_cache_size=0) for f in folders]
for e in embedders:
    e.embed_query(queries[0])
cold = time.perf_counter() - start
out = {"cold_s": cold}
if mode == "full":
    for e in embedders:
        for q in queries:
            e.embed_query(q)
    lat = [[] for _ in embedders]; cpu = [[] for _ in embedders]; bt = [[] for _ in embedders]
    rng = random.Random(0)
    order = list(range(len(embedders)))
    for _ in range(data["reps"]):
        for q in queries:
            rng.shuffle(order)
            for k in order:
                t, c = time.perf_counter(), time.thread_time()
                embedders[k].embed_query(q)
                cpu[k].append(time.thread_time() - c); lat[k].append(time.perf_counter() - t)
    for e in embedders:
        assert e.cache_stats().hits == 0
    for _ in range(5):
        rng.shuffle(order)
        for k in order:
            t = time.perf_counter(); embedders[k].embed_passages(passages[:32])
            bt[k].append(time.perf_counter() - t)
    out.update(query_s=lat, query_cpu_s=cpu, batch_s=bt,
               peak_rss_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
print(json.dumps(out))
"""


def read_lines(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line and not line.startswith("#")]


def corpus(reps: int) -> dict:
    doc = json.loads((ROOT / "tests/data/translation_pairs.json").read_text(encoding="utf-8"))
    return {
        "queries": read_lines(ROOT / "benchmarks/embedder_questions.txt"),
        "passages": [t for p in doc["pairs"] for t in (p["en"], p["fr"])],
        "reps": reps,
    }


def run_child(
    provider: str, folders: list[Path], mode: str, threads: int, data: dict
) -> tuple[dict, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAKI_")}
    started = time.perf_counter()
    child = subprocess.run(
        [sys.executable, "-c", CHILD, provider, mode, str(threads), *map(str, folders)],
        input=json.dumps(data), capture_output=True, text=True, check=True, env=env,
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


def summarise(
    models: Path, provider: str, fulls: list[dict], k: int, colds: list[tuple]
) -> dict:
    """Figures of folder ``k`` of the full children, and of its own cold-start children."""
    manifest = json.loads((models / provider / "manifest.json").read_text(encoding="utf-8"))
    ms = [s * 1e3 for f in fulls for s in f["query_s"][k]]
    cpu_ms = [s * 1e3 for f in fulls for s in f["query_cpu_s"][k]]
    batch_ms = [s * 1e3 for f in fulls for s in f["batch_s"][k]]
    return {
        "models": str(models),
        "query_p50_ms": round(pct(ms, 0.5), 2),
        "query_p95_ms": round(pct(ms, 0.95), 2),
        # CPU time of the calling thread: what the machine's other load inflates least.
        "query_cpu_p50_ms": round(pct(cpu_ms, 0.5), 2),
        "queries_timed": len(ms),
        "batch32_p50_ms": round(pct(batch_ms, 0.5), 1),
        "batch32_per_text_ms": round(pct(batch_ms, 0.5) / 32, 2),
        "cold_start_s": round(statistics.median(c[0]["cold_s"] for c in colds), 3),
        "cold_start_wall_s": round(statistics.median(c[1] for c in colds), 3),
        # With --before, both models share the timing child: use the cold-start figures alone.
        "peak_rss_mib": round(max(f["peak_rss_mib"] for f in fulls), 1),
        "model_mib": round(manifest["files"]["model.onnx"]["bytes"] / 2**20, 1),
        "tokenizer_mib": round(manifest["files"]["tokenizer.json"]["bytes"] / 2**20, 1),
        "graph_nodes": manifest.get("graph", {}).get("nodes"),
        "targets": TARGETS.get(provider, {}),
    }


def measure(provider: str, folders: dict[str, Path], args: argparse.Namespace) -> dict:
    """Query and batch timings: every child loads all the folders and interleaves them query by
    query. Cold starts: one folder per child, the folders alternating."""
    data = corpus(args.reps)
    paths = list(folders.values())
    fulls = [run_child(provider, paths, "full", args.threads, data)[0] for _ in range(args.rounds)]
    colds: dict[str, list[tuple]] = {name: [] for name in folders}
    for _ in range(args.cold_runs):
        for name, models in folders.items():
            colds[name].append(run_child(provider, [models], "cold", args.threads, data))
    return {
        name: summarise(models, provider, fulls, k, colds[name])
        for k, (name, models) in enumerate(folders.items())
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--providers", nargs="+", default=list(PROVIDERS))
    parser.add_argument("--before", type=Path, help="models folder of the earlier build")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3, help="query-timing children")
    parser.add_argument("--reps", type=int, default=5, help="passes over the questions per child")
    parser.add_argument("--cold-runs", type=int, default=7)
    args = parser.parse_args()
    folders = {"after": MODELS} if args.before is None else {"before": args.before, "after": MODELS}
    results = {p: measure(p, folders, args) for p in args.providers}
    report = {
        "machine": {"cpus": os.cpu_count(), "load_avg_1min_at_end": os.getloadavg()[0]},
        "threads": args.threads,
        "query_cache": "off in every child (cold-cache figures only)",
        "providers": results,
        "layers": layer_sizes(),
    }
    print(
        "| provider | models | query p50 / p95 ms (CPU p50) | batch 32 ms (per text) "
        "| cold start s (wall) | peak RSS MiB | model + tokenizer MiB |"
    )
    print("|---|---|---|---|---|---|---|")
    for provider, by_folder in results.items():
        for name, r in by_folder.items():
            print(
                f"| {provider} | {name} | {r['query_p50_ms']} / {r['query_p95_ms']} "
                f"({r['query_cpu_p50_ms']}) | {r['batch32_p50_ms']} ({r['batch32_per_text_ms']}) "
                f"| {r['cold_start_s']} ({r['cold_start_wall_s']}) | {r['peak_rss_mib']} "
                f"| {r['model_mib']} + {r['tokenizer_mib']} |"
            )
        if len(by_folder) == 2:
            before, after = by_folder["before"], by_folder["after"]
            print(
                f"| {provider} | after / before | "
                f"{after['query_p50_ms'] / before['query_p50_ms']:.2f}x "
                f"(CPU {after['query_cpu_p50_ms'] / before['query_cpu_p50_ms']:.2f}x) "
                f"| {after['batch32_p50_ms'] / before['batch32_p50_ms']:.2f}x "
                f"| {after['cold_start_s'] / before['cold_start_s']:.2f}x | | |"
            )
    for arch, layer in report["layers"].items():
        print(f"layer {arch}: {layer}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
