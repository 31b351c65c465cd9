"""Peak memory of one worker embedding the heaviest write batch: 32 passages that each fill
the model's 512-token window (2,000 characters), as ``POST /v1/events`` admits them.

    .venv/bin/python -m benchmarks.embed_memory [--runs 3] [--texts 32] [--chars 2000]

Each run is a fresh process: it loads the embedder, embeds one short passage (the resident
size of a warm worker), then the batch, and reports its resident set (``VmRSS``) after each and
its peak (``VmHWM``, what Lambda's ``Max Memory Used`` reports), and the batch's CPU time.
Medians over ``--runs``.
"""

import argparse
import json
import statistics
import subprocess
import sys

CHILD = """
import json, sys, time
from haki.embedding import get_embedder

def status(name):
    for line in open("/proc/self/status"):
        if line.startswith(name):
            return int(line.split()[1]) / 1024

texts, chars = int(sys.argv[1]), int(sys.argv[2])
embedder = get_embedder()
embedder.embed_passages(["a short warm-up passage"])
warm = status("VmRSS:")
words = "Marie asked again about the invoice of the export and the report language ".split()
batch = [" ".join(words[(i + j) % len(words)] for j in range(chars // 5))[:chars]
         for i in range(texts)]
tokens = sum(embedder.passage_tokens(batch))
started = time.process_time()
embedder.embed_passages(batch)
cpu = time.process_time() - started
print(json.dumps({"warm_mb": warm, "after_mb": status("VmRSS:"), "peak_mb": status("VmHWM:"),
                  "tokens": tokens, "cpu_s": cpu}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--texts", type=int, default=32)
    parser.add_argument("--chars", type=int, default=2000)
    args = parser.parse_args()
    runs = [json.loads(subprocess.run(
        [sys.executable, "-c", CHILD, str(args.texts), str(args.chars)],
        check=True, capture_output=True, text=True).stdout) for _ in range(args.runs)]
    print(f"{args.texts} passages of {args.chars} characters, {runs[0]['tokens']} model tokens, "
          f"{args.runs} fresh processes (medians):")
    for name, label in (("warm_mb", "warm worker RSS"), ("after_mb", "RSS after the batch"),
                        ("peak_mb", "peak RSS (VmHWM)")):
        print(f"  {label:<22} {statistics.median(r[name] for r in runs):7.0f} MB")
    print(f"  {'CPU time of the batch':<22} {statistics.median(r['cpu_s'] for r in runs):7.2f} s")


if __name__ == "__main__":
    main()
