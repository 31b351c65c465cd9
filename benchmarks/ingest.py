"""Ingest benchmark: the write routes through the real local server, over HTTP.

Starts ``haki serve --no-demo --workers 1`` on a scratch data folder (its own embedded
PostgreSQL; one worker with one embedder thread, as one Lambda container), then, from one
sequential client:

- ``POST /v1/events`` and ``POST /v1/facts`` with batches of 1 and of 100 short records
  (chat-sized, ~50 characters), and events in batches of 100 of mixed lengths (60 to 2,000
  characters, as a chat with long answers): records/s, request p50 / p95, records per
  CPU-second of the server and its PostgreSQL processes together ("per core": what a core of
  its own would do, whatever else the machine runs), and CPU ms per request;
- what long messages cost: one event per request at 60 to 16,000 characters, with the model
  tokens each is embedded on (the embedder truncates passages at its 512-token window);
- the worst batch the token budget admits (``haki.memory.api.MAX_EMBED_TOKENS``: 32 messages
  of 512 tokens), against API Gateway's 29 s;
- the embedding alone, in process, for the same texts: how much of a write it is.

Printed, and written to ``benchmarks/results/ingest.json`` (``--quick``: tiny, seconds, for the
smoke test). Run: ``make bench-ingest`` or ``.venv/bin/python -m benchmarks.ingest``.
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from haki.embedding import get_embedder
from haki.memory.api import MAX_EMBED_TOKENS
from haki_local import launch
from haki_local.environment import SOURCE_ROOT
from haki_local.launch import LocalApi

RESULTS_DIR = SOURCE_ROOT / "benchmarks" / "results"
#: p50 of ``POST /v1/events`` with 100 short messages, on one core (the issue's target).
TARGET_BATCH_P50_MS = 1500.0
#: API Gateway's integration timeout: no request may need longer.
GATEWAY_TIMEOUT_MS = 29_000.0
PROJECT = "acme-support"  # the dev key's project (no demo data is loaded)

_SHORT = [
    "Bonjour, ma facture de mai a été prélevée deux fois.",
    "Can you resend the invoice for order {n}? Thanks!",
    "Je préfère être contactée par e-mail, pas par téléphone.",
    "The SSO login fails again since this morning ({n}).",
    "Merci, le remboursement est bien arrivé hier soir.",
    "Please add two seats to our Pro plan, ticket {n}.",
]
#: An assistant-style paragraph (ASCII: its JSON size in bytes equals its length).
_LONG = ("Here is a summary of the steps we took on your account. First, we checked the two "
         "charges of May and confirmed that the second one was a duplicate caused by a retry "
         "of the payment gateway. We then issued a refund, which usually takes three to five "
         "business days to appear on your statement. In the meantime, we added a note to your "
         "file so that any agent you talk to knows the history. ")


@dataclass(frozen=True)
class Spec:
    """What one run measures; ``QUICK`` is the smoke test's."""

    requests_single: int
    requests_batch: int
    batch: int
    long_lengths: tuple[int, ...]
    long_requests: int
    budget_requests: int
    warmup: int


FULL = Spec(requests_single=200, requests_batch=20, batch=100,
            long_lengths=(60, 500, 1000, 2100, 4000, 16000), long_requests=10,
            budget_requests=3, warmup=5)
QUICK = Spec(requests_single=3, requests_batch=2, batch=5, long_lengths=(60, 2100),
             long_requests=1, budget_requests=0, warmup=1)


# --------------------------------------------------------------------------- the server


@dataclass
class Server:
    api: LocalApi
    data_dir: Path

    @property
    def url(self) -> str:
        return self.api.url

    @property
    def key(self) -> str:
        return self.api.key


@contextmanager
def local_server(data_dir: Path) -> Iterator[Server]:
    """``haki serve --no-demo --workers 1`` on ``data_dir`` (one worker: one request at a time,
    one embedder thread, as one Lambda container); stopped, with its database, on exit."""
    api = launch.start(data_dir, "--no-demo", "--workers", "1")
    try:
        yield Server(api, data_dir)
    finally:
        if launch.stop(api) != 0:
            raise RuntimeError("haki serve did not stop cleanly:\n" + "\n".join(api.lines[-20:]))


def _stat(pid: int) -> list[str]:
    """The fields of ``/proc/<pid>/stat`` after the command name."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _children(parent: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == parent:
                found.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def _ticks(pid: int) -> int:
    """utime + stime of a process, in clock ticks."""
    fields = _stat(pid)
    return int(fields[11]) + int(fields[12])


def _server_pids(server: Server) -> list[int]:
    """``haki serve`` and its worker."""
    return [server.api.process.pid, *_children(server.api.process.pid)]


def _postgres_pids(data_dir: Path) -> list[int]:
    """The postmaster of the server's database and its children (backends, workers)."""
    postmaster = int((data_dir / "pg16" / "postmaster.pid").read_text().split()[0])
    return [postmaster, *_children(postmaster)]


def _sum_ticks(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            total += _ticks(pid)
        except OSError:  # a backend that just exited
            continue
    return total


def cpu_seconds(server: Server) -> dict[str, float]:
    """CPU time so far of the server (its worker included) and of its PostgreSQL processes."""
    hz = os.sysconf("SC_CLK_TCK")
    return {"server": _sum_ticks(_server_pids(server)) / hz,
            "postgres": _sum_ticks(_postgres_pids(server.data_dir)) / hz}


def peak_rss_mib(server: Server) -> float:
    """The largest resident set the worker reached (``VmHWM``): what the function's memory
    must hold, the model and its inference buffers included."""
    peaks = []
    for pid in _children(server.api.process.pid):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                peaks.append(int(line.split()[1]) / 1024)
    return round(max(peaks, default=0.0), 1)


# --------------------------------------------------------------------------- requests


def post(server: Server, path: str, body: dict[str, Any]) -> tuple[int, float, Any]:
    """One request: status, client-side round trip in ms, JSON answer."""
    request = urllib.request.Request(
        server.url + path, data=json.dumps(body).encode(), method="POST",
        headers={"Authorization": f"Bearer {server.key}", "Content-Type": "application/json"})
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            status, payload = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, payload = error.code, error.read()
    return status, (time.perf_counter() - started) * 1000, json.loads(payload)


def short_message(n: int) -> str:
    return _SHORT[n % len(_SHORT)].format(n=n)


#: A chat's mix: mostly short turns, some paragraphs, one long answer in six (~145 tokens on
#: average, so 100 of them stay inside the token budget).
MIXED_LENGTHS = (60, 60, 60, 300, 1000, 2000)


def mixed_message(n: int) -> str:
    chars = MIXED_LENGTHS[n % len(MIXED_LENGTHS)]
    return short_message(n) if chars == 60 else long_message(chars, n)


def long_message(chars: int, n: int) -> str:
    text = f"[{n}] " + _LONG * (chars // len(_LONG) + 1)
    return text[:chars]


def events_body(subject: str, texts: list[str]) -> dict[str, Any]:
    return {"project_id": PROJECT, "events": [
        {"subject_id": subject, "kind": "conversation.message", "payload": {"text": t}}
        for t in texts]}


def facts_body(subject: str, start: int, count: int) -> dict[str, Any]:
    return {"project_id": PROJECT, "facts": [
        {"subject_id": subject, "predicate": f"preference_{i}", "value": short_message(i)}
        for i in range(start, start + count)]}


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    if len(ordered) == 1:
        return {"p50": round(ordered[0], 1), "p95": round(ordered[0], 1), "n": 1}
    cuts = statistics.quantiles(ordered, n=100, method="inclusive")
    return {"p50": round(cuts[49], 1), "p95": round(cuts[94], 1), "n": len(ordered)}


def run_scenario(
    server: Server, name: str, path: str, records: int, requests: int,
    body: Callable[[int], dict[str, Any]], warmup: int,
) -> dict[str, Any]:
    """``requests`` sequential requests of ``records`` records each (after ``warmup``)."""
    for i in range(warmup):
        status, _, answer = post(server, path, body(-1 - i))
        assert status == 201, answer
    before, started = cpu_seconds(server), time.perf_counter()
    samples = []
    for i in range(requests):
        status, ms, answer = post(server, path, body(i))
        assert status == 201, answer
        samples.append(ms)
    wall = time.perf_counter() - started
    after = cpu_seconds(server)
    cpu = {k: round(after[k] - before[k], 3) for k in before}
    total = records * requests
    return {
        "name": name, "route": f"POST {path}", "batch": records, "requests": requests,
        "records": total, "wall_s": round(wall, 3),
        "records_per_s": round(total / wall, 1),
        "latency_ms": _summary(samples),
        "cpu_s": cpu,
        "records_per_cpu_s": round(total / max(sum(cpu.values()), 1e-9), 1),
        "ms_per_record": round(wall * 1000 / total, 2),
    }


def run_long_messages(server: Server, spec: Spec) -> list[dict[str, Any]]:
    """One event per request at each length: what the text costs, and how much of it the
    model reads (tokens, counted by the embedder's own tokenizer)."""
    embedder = get_embedder()
    rows = []
    for chars in spec.long_lengths:
        text = long_message(chars, 0)
        tokens = embedder.passage_tokens([f"conversation.message: {text}"])[0]
        samples = []
        before = cpu_seconds(server)
        for i in range(spec.long_requests):
            status, ms, answer = post(server, "/v1/events",
                                      events_body(f"long-{chars}-{i}",
                                                  [long_message(chars, i)]))
            assert status == 201, answer
            samples.append(ms)
        rows.append({"chars": chars, "model_tokens": tokens,
                     "truncated": tokens >= embedder.manifest.max_tokens,
                     "latency_ms": _summary(samples),
                     "cpu_ms_per_request": _cpu_ms(before, cpu_seconds(server),
                                                   spec.long_requests)})
    return rows


def _cpu_ms(before: dict[str, float], after: dict[str, float], requests: int) -> float:
    """Server and PostgreSQL CPU per request, ms: what one request costs a core of its own
    whatever else the machine runs (10 ms clock ticks: meaningful over many requests)."""
    return round(sum(after[k] - before[k] for k in before) * 1000 / requests, 1)


def embedding_only(spec: Spec) -> dict[str, Any]:
    """The embedding alone, in this process, one thread (CPU time, the second of two runs):
    100 short messages and the worst admitted batch of long ones, as the write path embeds
    them."""
    from haki.memory.store import embed_texts
    from haki.settings import Settings

    embedder = get_embedder(Settings.from_env().model_copy(update={"embed_threads": 1}))
    embed_texts(embedder, ["warm up"])
    rows = {}
    window = embedder.manifest.max_tokens
    long_count = MAX_EMBED_TOKENS // window if spec.budget_requests else 2
    for name, texts in (
        (f"{spec.batch} short messages",
         [f"conversation.message: {short_message(i)}" for i in range(spec.batch)]),
        (f"{long_count} messages of {window} tokens",
         [f"conversation.message: {long_message(3000, i)}" for i in range(long_count)]),
    ):
        embed_texts(embedder, texts)  # once to warm every shape (each length is one run)
        started_cpu, started = time.process_time(), time.perf_counter()
        embed_texts(embedder, texts)
        rows[name] = {"texts": len(texts),
                      "cpu_ms": round((time.process_time() - started_cpu) * 1000, 1),
                      "wall_ms": round((time.perf_counter() - started) * 1000, 1)}
    return rows


def run_budget_batch(server: Server, spec: Spec) -> dict[str, Any] | None:
    """The largest batch of long messages one request may embed: every text at the model's
    window, as many as the token budget admits."""
    if spec.budget_requests == 0:
        return None
    window = get_embedder().manifest.max_tokens
    count = MAX_EMBED_TOKENS // window
    samples = []
    before = cpu_seconds(server)
    for i in range(spec.budget_requests):
        texts = [long_message(3000, i * count + j) for j in range(count)]
        status, ms, answer = post(server, "/v1/events", events_body(f"budget-{i}", texts))
        assert status == 201, answer
        samples.append(ms)
    cpu_ms = _cpu_ms(before, cpu_seconds(server), spec.budget_requests)
    over = post(server, "/v1/events", events_body(
        "budget-over", [long_message(3000, j) for j in range(count + 1)]))
    return {"events": count, "chars_each": 3000, "model_tokens": count * window,
            "budget_tokens": MAX_EMBED_TOKENS, "latency_ms": _summary(samples),
            "ms_per_event": round(statistics.median(samples) / count, 1),
            "cpu_ms_per_request": cpu_ms,
            "one_more_event": {"status": over[0], "code": over[2]["error"]["code"]},
            "gateway_timeout_ms": GATEWAY_TIMEOUT_MS}


def measure(server: Server, spec: Spec) -> dict[str, Any]:
    run = uuid.uuid4().hex[:6]
    scenarios = [
        run_scenario(server, "events, batch of 1", "/v1/events", 1, spec.requests_single,
                     lambda i: events_body(f"e1-{run}", [short_message(i)]), spec.warmup),
        run_scenario(server, f"events, batch of {spec.batch}", "/v1/events", spec.batch,
                     spec.requests_batch,
                     lambda i: events_body(f"e{spec.batch}-{run}-{i}",
                                           [short_message(i * spec.batch + j)
                                            for j in range(spec.batch)]), spec.warmup),
        run_scenario(server, "facts, batch of 1", "/v1/facts", 1, spec.requests_single,
                     lambda i: facts_body(f"f1-{run}-{i}", 0, 1), spec.warmup),
        run_scenario(server, f"facts, batch of {spec.batch}", "/v1/facts", spec.batch,
                     spec.requests_batch,
                     lambda i: facts_body(f"f{spec.batch}-{run}-{i}", 0, spec.batch),
                     spec.warmup),
    ]
    after_short = peak_rss_mib(server)
    scenarios.append(run_scenario(
        server, f"events, batch of {spec.batch}, mixed lengths", "/v1/events", spec.batch,
        max(1, spec.requests_batch // 4),
        lambda i: events_body(f"em-{run}-{i}", [
            mixed_message(i * spec.batch + j) for j in range(spec.batch)]), spec.warmup))
    for scenario in scenarios:
        cpu = sum(scenario["cpu_s"].values())
        scenario["cpu_ms_per_request"] = round(cpu * 1000 / scenario["requests"], 1)
    measured = {"scenarios": scenarios, "long_messages": run_long_messages(server, spec),
                "budget_batch": run_budget_batch(server, spec)}
    measured["peak_rss_mib"] = {"after_short_batches": after_short,
                                "after_long_messages": peak_rss_mib(server)}
    return measured


# --------------------------------------------------------------------------- report


def machine() -> dict[str, Any]:
    model = next((line.split(":", 1)[1].strip() for line in
                  Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor())
    return {"cpus": os.cpu_count(), "cpu_model": model, "python": platform.python_version(),
            "load_average": [round(x, 2) for x in os.getloadavg()]}


def table(results: dict[str, Any]) -> list[str]:
    lines = ["| scenario | requests | records/s (wall) | records per CPU-s | p50 / p95 ms | "
             "CPU ms per request |", "|---|---|---|---|---|---|"]
    for s in results["scenarios"]:
        lat = s["latency_ms"]
        lines.append(f"| {s['name']} | {s['requests']} | {s['records_per_s']} | "
                     f"{s['records_per_cpu_s']} | {lat['p50']} / {lat['p95']} | "
                     f"{s['cpu_ms_per_request']} |")
    lines += ["", "| message chars | model tokens | POST /v1/events p50 / p95 ms | "
                  "CPU ms per request |", "|---|---|---|---|"]
    for row in results["long_messages"]:
        cut = " (truncated)" if row["truncated"] else ""
        lines.append(f"| {row['chars']:,} | {row['model_tokens']}{cut} | "
                     f"{row['latency_ms']['p50']} / {row['latency_ms']['p95']} | "
                     f"{row['cpu_ms_per_request']} |")
    budget = results["budget_batch"]
    if budget:
        lines += ["", f"Worst admitted batch: {budget['events']} events of "
                      f"{budget['model_tokens'] // budget['events']} tokens "
                      f"({budget['model_tokens']:,} tokens): p50 {budget['latency_ms']['p50']} ms "
                      f"wall, {budget['cpu_ms_per_request']} ms CPU (API Gateway gives up at "
                      f"{GATEWAY_TIMEOUT_MS:.0f} ms); one more event: "
                      f"{budget['one_more_event']['status']} "
                      f"{budget['one_more_event']['code']}"]
    rss = results["peak_rss_mib"]
    lines += ["", f"Peak resident memory of the worker: {rss['after_short_batches']} MiB after "
                  f"the short batches, {rss['after_long_messages']} MiB after the mixed and "
                  "long ones"]
    lines += ["", "Embedding alone (in process, one thread): " + "; ".join(
        f"{name}: {row['cpu_ms']} ms CPU" for name, row in results["embedding_only"].items())]
    target = results["target"]
    lines += ["", f"Target: POST /v1/events with {target['batch']} short messages, p50 ≤ "
                  f"{target['p50_ms_max']:.0f} ms on one core: p50 {target['p50_ms']} ms wall "
                  f"(load average {results['machine']['load_average'][0]} on "
                  f"{results['machine']['cpus']} CPUs), {target['cpu_ms_per_request']} ms CPU "
                  f"a request: {'met' if target['met'] else 'MISSED'} by the wall clock, "
                  f"{'met' if target['met_on_cpu'] else 'MISSED'} on CPU time"]
    return lines


def run(spec: Spec, out: Path, name: str) -> dict[str, Any]:
    started = datetime.now(UTC)
    build = SOURCE_ROOT / "build"
    build.mkdir(exist_ok=True)
    data_dir = Path(tempfile.mkdtemp(prefix="bench-ingest-", dir=build))
    try:
        machine_before = machine()
        with local_server(data_dir) as server:
            measured = measure(server, spec)
        measured["embedding_only"] = embedding_only(spec)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    batch = next(s for s in measured["scenarios"] if s["route"] == "POST /v1/events"
                 and s["batch"] == spec.batch)
    results = {
        "benchmark": "ingest", "plan": name, "started_at": started.isoformat(),
        "command": "make bench-ingest" if spec is FULL else
                   "python -m benchmarks.ingest --quick",
        "method": "haki serve --no-demo --workers 1 on a scratch data folder (embedded "
                  "PostgreSQL 16), one embedder thread; one sequential client over local "
                  "HTTP; latency is the client's round trip; CPU is the server and its worker "
                  "plus its PostgreSQL processes (utime + stime) during the measured requests; "
                  "short messages ~50 characters",
        "machine": {**machine_before, "load_average_after": machine()["load_average"]},
        **measured,
        "target": {"batch": spec.batch, "p50_ms": batch["latency_ms"]["p50"],
                   "p50_ms_max": TARGET_BATCH_P50_MS,
                   "met": batch["latency_ms"]["p50"] <= TARGET_BATCH_P50_MS,
                   "cpu_ms_per_request": batch["cpu_ms_per_request"],
                   "met_on_cpu": batch["cpu_ms_per_request"] <= TARGET_BATCH_P50_MS},
    }
    results["table"] = table(results)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny run (the smoke test's)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = parser.parse_args()
    spec, name = (QUICK, "ingest-quick") if args.quick else (FULL, "ingest")
    results = run(spec, args.out, name)
    print("\n".join(results["table"]))
    print(f"\nwritten: {args.out / (name + '.json')}")


if __name__ == "__main__":
    main()
