"""Correctness of a built model on another machine or architecture (no timing).

Needs only numpy, onnxruntime and tokenizers, so it runs under an emulator with a bare
interpreter (see docs/embedder.md, "arm64"):

    python benchmarks/embedder_crosscheck.py dump MODEL_FOLDER OUT.npz   # on the target
    .venv/bin/python benchmarks/embedder_crosscheck.py compare A.npz B.npz

``dump`` embeds the check sentences (both prefixes) and the translation pairs (query prefix)
one at a time, and again as padded batches of 8 in sorted-length order and reversed order (batch
invariance, max abs difference), twice in fresh sessions (determinism), and records the
onnxruntime version, machine and the MLAS-relevant CPU flags it can see. ``compare`` prints the
min / mean cosine between two dumps, their batch-invariance and determinism figures, and the
cross-lingual top-1 of each dump's vectors (EN queries against FR passages, and the
reverse).
"""

import json
import platform
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

ROOT = Path(__file__).resolve().parents[1]
PAD_ID = 1


def read_lines(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line and not line.startswith("#")]


def texts() -> tuple[list[str], int]:
    sentences = read_lines(ROOT / "layers/model/recipe/check_sentences.txt")
    pairs = json.loads((ROOT / "tests/data/translation_pairs.json").read_text(encoding="utf-8"))
    out = [p + s for s in sentences for p in ("query: ", "passage: ")]
    out += ["query: " + p["en"] for p in pairs["pairs"]]
    out += ["passage: " + p["fr"] for p in pairs["pairs"]]
    return out, len(pairs["pairs"])


def session(folder: Path) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(
        str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"]
    )


def run(sess: ort.InferenceSession, tok: Tokenizer, batch: list[str]) -> np.ndarray:
    enc = [tok.encode(t).ids for t in batch]
    width = max(len(e) for e in enc)
    ids = np.full((len(batch), width), PAD_ID, dtype=np.int64)
    mask = np.zeros_like(ids)
    for row, e in enumerate(enc):
        ids[row, : len(e)] = e
        mask[row, : len(e)] = 1
    return sess.run(None, {"input_ids": ids, "attention_mask": mask})[0]


def cpu_flags() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("features", "flags")):
                wanted = (
                    "asimddp", "i8mm", "bf16", "sve", "sme", "avx512_vnni", "avx_vnni", "amx_int8"
                )
                return " ".join(f for f in line.split(":", 1)[1].split() if f in wanted)
    except OSError:
        pass
    return ""


def dump(folder: Path, out: Path) -> None:
    tok_file = folder / "tokenizer.json"
    if not tok_file.is_file():
        tok_file = ROOT / "build/models/e5-small-multilingual/tokenizer.json"
    tok = Tokenizer.from_file(str(tok_file))
    tok.no_padding()
    tok.enable_truncation(max_length=512)
    all_texts, n_pairs = texts()
    first = session(folder)
    single = np.stack([run(first, tok, [t])[0] for t in all_texts])
    second = session(folder)
    again = np.stack([run(second, tok, [t])[0] for t in all_texts])
    order = sorted(range(len(all_texts)), key=lambda i: len(all_texts[i]))
    batched = np.empty_like(single)
    for start in range(0, len(order), 8):
        rows = order[start : start + 8]
        batched[rows] = run(first, tok, [all_texts[i] for i in rows])
    reverse = np.empty_like(single)
    for start in range(0, len(order), 8):
        rows = order[::-1][start : start + 8]
        reverse[rows] = run(first, tok, [all_texts[i] for i in rows])
    np.savez(
        out,
        single=single,
        info=json.dumps(
            {
                "machine": platform.machine(),
                "onnxruntime": ort.__version__,
                "cpu_flags": cpu_flags(),
                "n_pairs": n_pairs,
                "batch_max_abs_diff": float(
                    max(np.abs(batched - single).max(), np.abs(reverse - single).max())
                ),
                "deterministic_across_sessions": bool(np.array_equal(single, again)),
            }
        ),
    )
    print(json.loads(str(np.load(out)["info"])))


def top1(vectors: np.ndarray, n_pairs: int) -> tuple[float, float]:
    en_q = vectors[-2 * n_pairs : -n_pairs]
    fr_p = vectors[-n_pairs:]
    truth = np.arange(n_pairs)
    en_to_fr = float(np.mean((en_q @ fr_p.T).argmax(1) == truth))
    return en_to_fr, float(np.mean((fr_p @ en_q.T).argmax(1) == truth))


def compare(a: Path, b: Path) -> None:
    da, db = np.load(a), np.load(b)
    ia, ib = json.loads(str(da["info"])), json.loads(str(db["info"]))
    cos = (da["single"] * db["single"]).sum(axis=1)
    print(f"{a.name}: {ia}\n  top-1 EN->FR / FR->EN {top1(da['single'], ia['n_pairs'])}")
    print(f"{b.name}: {ib}\n  top-1 EN->FR / FR->EN {top1(db['single'], ib['n_pairs'])}")
    print(
        f"cosine {a.name} vs {b.name}: min {cos.min():.6f} mean {cos.mean():.6f} "
        f"over {cos.size} texts"
    )


if __name__ == "__main__":
    if sys.argv[1] == "dump":
        dump(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        compare(Path(sys.argv[2]), Path(sys.argv[3]))
