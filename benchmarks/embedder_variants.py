"""Compare embedder model variants side by side (figures, not tests).

    .venv/bin/python benchmarks/embedder_variants.py REF=build/variants/baseline \
        NEW=build/models/e5-small-multilingual [--threads 1] [--reps 30]

Each ``NAME=FOLDER`` (optionally ``@THREADS`` and ``,spin`` / ``,nospin`` for that variant's
intra-op threads and ``session.intra_op.allow_spinning``) is a folder with ``model.onnx`` (the
tokenizer is the built provider's, ``build/models/e5-small-multilingual/tokenizer.json``, unless
the folder has its own); CPU time is the calling thread's only (with 2 threads, read wall time).
All variants are loaded in this one process and timed **interleaved**: for every repetition and
every question the variants run one after the other in a shuffled order, so machine noise
(2 shared cores) lands on all of them alike. Reported: per-call p50 / p95 (wall) and p50 of the
calling thread's CPU time (less inflated by other load) of tokenize + arrays + ``session.run``
for the questions of ``embedder_questions.txt`` (one query at a time, the query
path), and the min / mean cosine of each variant's vectors to the first variant's on
``check_sentences.txt`` (both prefixes) and the translation pairs (query prefix).
"""

import argparse
import json
import random
import statistics
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TOKENIZER = ROOT / "build/models/e5-small-multilingual/tokenizer.json"
PAD_ID = 1  # e5 (XLM-R) pad id; padding is only used by the cosine pass, one text at a time


def read_lines(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line and not line.startswith("#")]


def questions() -> list[str]:
    return read_lines(ROOT / "benchmarks/embedder_questions.txt")


def quality_texts() -> list[str]:
    sentences = read_lines(ROOT / "layers/model/recipe/check_sentences.txt")
    pairs = json.loads((ROOT / "tests/data/translation_pairs.json").read_text(encoding="utf-8"))
    texts = [p + s for s in sentences for p in ("query: ", "passage: ")]
    texts += ["query: " + p[lang] for p in pairs["pairs"] for lang in ("en", "fr")]
    return list(dict.fromkeys(texts))


class Variant:
    def __init__(self, name: str, folder: Path, threads: int, spinning: bool) -> None:
        self.name = name
        tokenizer_file = folder / "tokenizer.json"
        self.tokenizer = Tokenizer.from_file(
            str(tokenizer_file if tokenizer_file.is_file() else DEFAULT_TOKENIZER)
        )
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=512)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.add_session_config_entry(
            "session.intra_op.allow_spinning", "1" if spinning else "0"
        )
        started = time.perf_counter()
        self.session = ort.InferenceSession(
            str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )
        self.load_s = time.perf_counter() - started

    def embed(self, text: str) -> np.ndarray:
        ids = np.array([self.tokenizer.encode(text).ids], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        return self.session.run(None, feed)[0][0]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "variants", nargs="+",
        help="NAME=FOLDER[@THREADS[,spin|nospin]] (the first is the reference)",
    )
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--no-spinning", action="store_true")
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    variants = []
    for spec in args.variants:
        name, _, rest = spec.partition("=")
        folder, _, threads = rest.partition("@")
        threads, _, spin = threads.partition(",")
        variants.append(
            Variant(
                name, Path(folder), int(threads or args.threads),
                spinning=(spin or ("nospin" if args.no_spinning else "spin")) == "spin",
            )
        )

    texts = quality_texts()
    vectors = {v.name: np.stack([v.embed(t) for t in texts]) for v in variants}
    ref = vectors[variants[0].name]

    qs = ["query: " + q for q in questions()]
    for v in variants:  # warm-up
        for q in qs:
            v.embed(q)
    times: dict[str, list[float]] = {v.name: [] for v in variants}
    cpu: dict[str, list[float]] = {v.name: [] for v in variants}
    rng = random.Random(args.seed)
    for _ in range(args.reps):
        for q in qs:
            order = variants[:]
            rng.shuffle(order)
            for v in order:
                started, cpu_started = time.perf_counter(), time.thread_time()
                v.embed(q)
                cpu[v.name].append(time.thread_time() - cpu_started)
                times[v.name].append(time.perf_counter() - started)

    tokens = statistics.mean(len(variants[0].tokenizer.encode(q).ids) for q in qs)
    print(
        f"{len(qs)} questions ({tokens:.1f} tokens on average with the prefix) x {args.reps} "
        f"reps, interleaved; default threads={args.threads}, spinning={not args.no_spinning}; "
        f"cosines on {len(texts)} texts"
    )
    print(
        "| variant | p50 ms | p95 ms | CPU p50 ms | p50 vs first | CPU p50 vs first "
        "| min / mean cosine vs first | load s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    base, base_cpu = pct(times[variants[0].name], 0.5), pct(cpu[variants[0].name], 0.5)
    for v in variants:
        ms = [t * 1e3 for t in times[v.name]]
        cpu_p50 = pct(cpu[v.name], 0.5)
        cos = (vectors[v.name] * ref).sum(axis=1)
        print(
            f"| {v.name} | {pct(ms, 0.5):.2f} | {pct(ms, 0.95):.2f} | {cpu_p50 * 1e3:.2f} "
            f"| {pct(ms, 0.5) / (base * 1e3):.2f}x | {cpu_p50 / base_cpu:.2f}x "
            f"| {cos.min():.5f} / {cos.mean():.5f} | {v.load_s:.2f} |"
        )


if __name__ == "__main__":
    main()
