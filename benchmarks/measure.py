"""Timing loops and probes of one scenario: calls of the assembler and of the naive baseline,
the retrieval SQL alone, the vector arm's recall, trace rows, and concurrent throughput.

Every loop runs the same :class:`~benchmarks.synthetic.BenchQuery` list in-process against the
runtime role (row-level security on, as in production).
"""

import os
import threading
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from uuid import UUID

import numpy as np
import psycopg
from psycopg.rows import dict_row

from benchmarks.naive import assemble_naive, nearest_facts_exact
from benchmarks.synthetic import BenchQuery
from haki.assembler import RetrievalConfig, arms, assemble
from haki.assembler.assemble import Embed
from haki.db import Database
from haki.db.connection import acting_for
from haki.embedding import Embedder
from haki.keys import IdentityCache, authenticate
from haki.models import ContextRequest
from haki_local.protocol import count_protocol


@dataclass(frozen=True)
class Call:
    """One timed call: end to end (query embedding included) and the assembler's parts."""

    e2e_ms: float
    embed_ms: float
    retrieval_ms: float
    trace_ms: float
    candidates: int
    facts_served: int
    trace_id: UUID
    #: CPU time of the calling thread (the assembler's Python and psycopg) and of the thread
    #: that embedded the question.
    client_cpu_ms: float = 0.0
    embed_cpu_ms: float = 0.0


@dataclass(frozen=True)
class Loop:
    """The calls of one timing loop and the CPU the database server spent on them: the
    processes behind the loop's connections, read from ``/proc`` (the benchmark's server is
    local) before and after the loop, per call; None where ``/proc`` does not show them.
    Parallel query workers are other processes: a plan with a Gather is undercounted."""

    calls: list[Call]
    database_cpu_ms: float | None


@dataclass(frozen=True)
class Context:
    """What every probe needs: the runtime-role URL and the assembler's inputs."""

    app_url: str
    config: RetrievalConfig
    embedder: Embedder | None
    #: project → the hash of a key of that project: every call acts for it (RLS follows keys).
    keys: dict[str, str]
    #: project → that key in clear, for the pass that authenticates as the edge does.
    api_keys: dict[str, str]

    def tenant(self, q: BenchQuery) -> AbstractContextManager[None]:
        """The runtime role acting for the question's project, as the API edge binds a key."""
        return acting_for(self.keys[q.project_id])


def summarize(values: Sequence[float]) -> dict[str, float]:
    """p50 / p95 / p99 / mean / max of ``values`` (ms), rounded for the results file."""
    a = np.asarray(values, dtype=float)
    if a.size == 0:
        return {}
    p50, p95, p99 = np.percentile(a, [50, 95, 99])
    return {"p50": round(float(p50), 3), "p95": round(float(p95), 3),
            "p99": round(float(p99), 3), "mean": round(float(a.mean()), 3),
            "max": round(float(a.max()), 3), "n": int(a.size)}


def precomputed(vector: np.ndarray) -> Embed:
    """The embedding step of a call whose query vector was computed beforehand."""
    return lambda: vector


def _request(q: BenchQuery) -> ContextRequest:
    return ContextRequest(project_id=q.project_id, subject_id=q.subject_id, query=q.text,
                          purpose="benchmark")


def _timed_call(ctx: Context, db: Database, q: BenchQuery, *, naive: bool = False) -> Call:
    """Embed the question with the real embedder (cost measured) and assemble (or run the
    naive baseline, ``benchmarks.naive``) with the synthetic vector the data was generated
    with, as the context handler does."""
    embedder = ctx.embedder
    embed_cpu = [0.0]

    def embed() -> np.ndarray:
        cpu = time.thread_time()
        if embedder is not None:
            embedder.embed_query(q.text)
        embed_cpu[0] = (time.thread_time() - cpu) * 1000.0
        return q.vector

    started, cpu = time.perf_counter(), time.thread_time()
    with ctx.tenant(q):
        result = (assemble_naive if naive else assemble)(_request(q), embed, db=db,
                                                         config=ctx.config)
    finished = time.perf_counter()
    client_cpu = (time.thread_time() - cpu) * 1000.0
    client_cpu -= embed_cpu[0]  # embedded on this thread: that time is the embedding's
    return Call(
        e2e_ms=(finished - started) * 1000.0, embed_ms=result.timings_ms["embed"],
        retrieval_ms=result.timings_ms["retrieval"], trace_ms=result.timings_ms["trace"],
        candidates=result.candidates, facts_served=result.facts_served,
        trace_id=result.response.trace_id, client_cpu_ms=client_cpu,
        embed_cpu_ms=embed_cpu[0])


def run_calls(ctx: Context, queries: Sequence[BenchQuery], *, naive: bool = False,
              warmup: int = 0) -> Loop:
    """Sequential calls of the assembler (or the naive baseline); ``warmup`` untimed first
    (they also open both connections, whose server processes are then read)."""
    db = Database(ctx.app_url)
    try:
        for q in queries[:warmup]:
            _timed_call(ctx, db, q, naive=naive)
        pids = [handle.connection().info.backend_pid for handle in (db, db.sibling())]
        before = server_cpu_ms(pids)
        calls = [_timed_call(ctx, db, q, naive=naive) for q in queries]
        after = server_cpu_ms(pids)
    finally:
        db.close()
    spent = None if before is None or after is None or not calls else (
        (after - before) / len(calls))
    return Loop(calls, spent)


_CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def server_cpu_ms(pids: Sequence[int]) -> float | None:
    """User + system CPU time the processes ``pids`` have used (ms, at the kernel's clock-tick
    resolution: meaningful over a loop, not a call); None if one is not visible in
    ``/proc``."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            return None
        total += int(fields[11]) + int(fields[12])  # utime, stime (proc(5), fields 14-15)
    return total * 1000.0 / _CLOCK_TICKS_PER_S


@dataclass(frozen=True)
class Protocol:
    """What went over the wire per context call (``haki_local.protocol``), BEGIN/COMMIT apart:
    the assembler's, and the whole request's as the API edge makes it — the key looked up
    (the first call of a key in a process, ``cold``) or found in the identity cache (``warm``),
    then the assembler. ``side_*``: the nearest facts' on the handle's second connection,
    whose round trip runs beside the call's vector-arm round trip."""

    statements: list[int]
    transaction_control: list[int]
    round_trips: list[int]
    request_round_trips_cold: list[int]
    request_round_trips_warm: list[int]
    side_statements: list[int]
    side_round_trips: list[int]


def protocol(ctx: Context, queries: Sequence[BenchQuery]) -> Protocol:
    """Statements and round trips of each call, counted on the connection's protocol trace
    (a separate pass: tracing costs time, so the timed loops run without it). Each call is
    authenticated as the edge does it (``haki.keys.authenticate`` with an identity cache of
    this pass), with the clear key of its project."""
    db = Database(ctx.app_url)
    cache = IdentityCache(ttl_s=3600.0)
    counted = Protocol([], [], [], [], [], [], [])
    try:
        # Each question twice: the first time its key may be new to the cache, then not.
        for q in [q for q in queries for _ in range(2)]:
            cold = cache.get(ctx.keys[q.project_id]) is None
            # (one count at a time on a connection)
            with (count_protocol(db.connection()) as counts,
                  count_protocol(db.sibling().connection()) as side):
                identity = authenticate(db, ctx.api_keys[q.project_id], cache)
                with acting_for(identity.key_hash):
                    assemble(_request(q), precomputed(q.vector), db=db, config=ctx.config)
            (counted.request_round_trips_cold if cold
             else counted.request_round_trips_warm).append(counts.round_trips)
            if not cold:  # no lookup: the assembler's own traffic
                counted.statements.append(counts.statements)
                counted.transaction_control.append(counts.transaction_control)
                counted.round_trips.append(counts.round_trips)
                counted.side_statements.append(side.statements)
                counted.side_round_trips.append(side.round_trips)
    finally:
        db.close()
    return counted


def run_sql_only(ctx: Context, queries: Sequence[BenchQuery], *, naive: bool = False,
                 warmup: int = 0) -> list[float]:
    """Milliseconds of the candidates statements alone, rows fetched, inside the scoped
    transaction: the naive scan of the scope's facts, or the fused arms as
    a call runs them (the text arm, then the nearest events with the nearest facts beside them
    on the second connection) — without the embedding to hide the text arm, and without the
    merge."""
    db = Database(ctx.app_url)
    samples: list[float] = []
    try:
        for i, q in enumerate([*queries[:warmup], *queries]):
            request = _request(q)
            with ctx.tenant(q), db.transaction(q.project_id, pipeline=True) as conn:
                started = time.perf_counter()
                if naive:
                    nearest_facts_exact(conn, request, ctx.config, q.vector).fetchall()
                else:
                    arms.text_arm(conn, request, ctx.config).fetchall()
                    with db.sibling().transaction(q.project_id, pipeline=True,
                                                  read_only=True) as side:
                        facts = arms.nearest_facts(side, request, ctx.config, q.vector)
                        events = arms.nearest_events(conn, request, ctx.config, q.vector)
                    facts.fetchall()
                    events.fetchall()
                elapsed = (time.perf_counter() - started) * 1000.0
            if i >= warmup:
                samples.append(elapsed)
    finally:
        db.close()
    return samples


#: Rows of the vector arm the recall probe compares (the exact top 64 of the scope).
RECALL_DEPTH = 64

#: The same search with none of the arm's planner settings: pgvector's defaults (``ef_search``
#: 40, no iterative scan), for contrast.
PLAIN_NEAREST_FACTS = """
SELECT f.id FROM facts AS f
WHERE f.project_id = %(project_id)s AND f.subject_id = %(subject_id)s AND f.status = 'active'
  AND (f.valid_to IS NULL OR f.valid_to > now())
ORDER BY f.embedding <=> %(query_vector)s
LIMIT %(depth)s
"""


@dataclass(frozen=True)
class Recall:
    #: Share of the exact in-scope top-k the vector arm returned, per query.
    tuned: list[float]
    #: The same with pgvector's defaults (ef_search 40, no iterative scan).
    pgvector_defaults: list[float]
    #: Rows the vector arm returned per query (it should be min(top_k, scope size)).
    returned: list[int]


def vector_recall(ctx: Context, queries: Sequence[BenchQuery]) -> Recall:
    """The served vector arm over facts (``arms.nearest_facts``, :data:`RECALL_DEPTH` deep)
    against the exact in-scope top-k (the same call with index scans off: the scope is then
    read through its btree or sequentially and sorted exactly), and pgvector's defaults."""
    config = replace(ctx.config, vector_top_k=RECALL_DEPTH, vector_top_k_min=RECALL_DEPTH)
    db = Database(ctx.app_url)
    tuned: list[float] = []
    defaults: list[float] = []
    returned: list[int] = []
    try:
        for q in queries:
            request = _request(q)
            plain_params = {"project_id": q.project_id, "subject_id": q.subject_id,
                            "query_vector": q.vector, "depth": RECALL_DEPTH}
            with ctx.tenant(q):
                with db.transaction(q.project_id) as conn:
                    exact = _ids(nearest_facts_exact(conn, request, config, q.vector,
                                                     RECALL_DEPTH))
                with db.transaction(q.project_id) as conn:
                    hnsw = _ids(arms.nearest_facts(conn, request, config, q.vector))
                with db.transaction(q.project_id) as conn:
                    plain = _ids(conn.cursor(row_factory=dict_row).execute(
                        PLAIN_NEAREST_FACTS, plain_params))
            denominator = max(1, len(exact))
            tuned.append(len(exact & hnsw) / denominator)
            defaults.append(len(exact & plain) / denominator)
            returned.append(len(hnsw))
    finally:
        db.close()
    return Recall(tuned, defaults, returned)


def _ids(cursor: arms.Cursor) -> set[UUID]:
    return {row["id"] for row in cursor.fetchall()}


def trace_rows(owner_url: str, trace_ids: Sequence[UUID]) -> list[int]:
    """Decision rows persisted for each call."""
    with psycopg.connect(owner_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT c.trace_id, coalesce(sum(cardinality(t.ordinals)), 0) "
            "FROM context_calls AS c "
            "LEFT JOIN context_traces AS t USING (trace_id, created_at) "
            "WHERE c.trace_id = ANY (%s) GROUP BY c.trace_id",
            (list(trace_ids),),
        ).fetchall()
    return [int(n) for _, n in rows]


def throughput(ctx: Context, queries: Sequence[BenchQuery], clients: int) -> dict[str, float]:
    """Calls per second with ``clients`` threads, each with its own connection, sharing the
    queries round-robin; end-to-end calls (embedding included)."""
    shares = [list(queries[i::clients]) for i in range(clients)]
    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(clients + 1)

    def client(index: int) -> None:
        barrier.wait()
        db = Database(ctx.app_url)
        try:
            for q in shares[index]:
                latencies[index].append(_timed_call(ctx, db, q).e2e_ms)
        except BaseException as exc:
            errors.append(exc)
        finally:
            db.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    barrier.wait()
    started = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    if errors:
        raise errors[0]
    calls = sum(len(lat) for lat in latencies)
    merged = summarize([x for lat in latencies for x in lat])
    return {"clients": clients, "calls": calls, "calls_per_s": round(calls / wall, 2),
            "e2e_p50_ms": merged["p50"], "e2e_p95_ms": merged["p95"]}
