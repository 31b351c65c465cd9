"""The query embedding overlaps the first round trip (issue 13, item 2): with a vector still
being computed, the fused assembler sends BEGIN, the scope and the text arm first, opens the
nearest facts' transaction on the second connection, takes the text arm's rows in, and waits
for the vector only then — with the same packet and trace as a vector given up front.
Text-arm rows the vector arm did not return get their distance in Python: the same as
pgvector's ``<=>``."""

import threading
import time
from concurrent.futures import Future
from dataclasses import replace

import numpy as np
import psycopg
import pytest

from haki.assembler import (
    DEFAULT_CONFIG,
    QueryVector,
    assemble,
    compute_in_background,
    embed_query,
)
from haki.assembler.retrieval import cosine_distance
from haki.assembler.routines import TEXT_ARM
from haki.db import Database
from haki.embedding import Embedder
from haki.models import ContextRequest
from tests.integration.conftest import Seeder, blend, trace_rows, unit_vector

Q = unit_vector(1)
#: A vector arm of 8 rows, so that the far fact comes from the text arm alone.
CONFIG = replace(DEFAULT_CONFIG, vector_top_k=8)


def _seed(seed: Seeder) -> None:
    for i in range(12):
        seed.fact("note", f"the invoice number {i} was paid by Bernard",
                  blend(Q, unit_vector(100 + i), 0.2 + 0.05 * i))
    for i in range(4):
        seed.event("conversation.message", {"text": f"Bernard sent invoice {i}"},
                   blend(Q, unit_vector(200 + i), 0.5))
    # Found by the text arm only: far from the query vector, sharing its rare terms.
    seed.fact("note", "Bernard keeps the zanzibar invoice ledger", unit_vector(300))


def _request(project_id: str) -> ContextRequest:
    return ContextRequest(project_id=project_id, subject_id="alice",
                          query="who paid the zanzibar invoice", purpose="test")


def _text_arm_seen(owner: psycopg.Connection, deadline_s: float = 10.0) -> bool:
    """True once a runtime-role backend has run the text arm (its last statement, seen in
    pg_stat_activity) while the test holds the vector back."""
    until = time.monotonic() + deadline_s
    while time.monotonic() < until:
        row = owner.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE usename = 'haki_app' "
            "AND query LIKE %s AND state <> 'idle'", (f"%{TEXT_ARM.name}(%",)).fetchone()
        if row and row[0]:
            return True
        time.sleep(0.01)
    return False


def test_the_text_arm_runs_before_the_vector_is_awaited(
    seed: Seeder, app_db: Database, owner_conn: psycopg.Connection, project_id: str,
) -> None:
    _seed(seed)
    seen: list[bool] = []

    def embed() -> np.ndarray:
        seen.append(_text_arm_seen(owner_conn))
        return Q

    result = assemble(_request(project_id), compute_in_background(embed), db=app_db,
                      config=CONFIG)
    assert seen == [True], "the text arm had not reached the server while the vector waited"
    assert result.timings_ms["embed_wait"] > 0
    assert result.facts_served > 0


def _after(delay_s: float) -> Future[QueryVector]:
    """The query vector, computed in the background in ``delay_s``: still pending when the
    assembler looks (its text arm's rows are then taken in while it waits), or, with 0 and
    awaited first, a future already done (the rows are taken with the vector arm's)."""
    def embed() -> np.ndarray:
        time.sleep(delay_s)
        return Q
    future = compute_in_background(embed)
    if delay_s == 0:
        future.result()
    return future


@pytest.mark.parametrize("parallel_arms", [True, False])
def test_a_pending_vector_gives_the_packet_and_trace_of_a_ready_one(
    seed: Seeder, app_db: Database, owner_conn: psycopg.Connection, project_id: str,
    parallel_arms: bool,
) -> None:
    _seed(seed)
    config = replace(CONFIG, parallel_arms=parallel_arms)
    ready = assemble(_request(project_id), QueryVector(Q), db=app_db, config=config)
    pending = assemble(_request(project_id), _after(0.3), db=app_db, config=config)
    done = assemble(_request(project_id), _after(0), db=app_db, config=config)
    assert pending.timings_ms["embed_wait"] > 0 and done.timings_ms["embed_wait"] < 50
    strip = ("trace_id", "created_at")
    rows = [[{k: v for k, v in r.items() if k not in strip}
             for r in trace_rows(owner_conn, a.response.trace_id)]
            for a in (ready, pending, done)]
    for other in (pending, done):
        assert other.response.packet == ready.response.packet
    assert rows[0] == rows[1] == rows[2] and len(rows[0]) == ready.candidates
    text_only = [r for r in rows[0] if r["vector_rank"] is None and r["text_arm_rank"]]
    assert text_only, "the seed data should give a row of the text arm alone"


def test_the_side_transaction_opens_before_the_vector_is_awaited(
    seed: Seeder, app_db: Database, owner_conn: psycopg.Connection, project_id: str,
) -> None:
    """With the nearest facts on the second connection, that connection's BEGIN and scope
    have reached the server while the vector is still being computed: a runtime-role backend
    in a transaction whose last statement set the scope (the call's own connection has run
    the text arm since its scope)."""
    _seed(seed)
    seen: list[bool] = []

    def embed() -> np.ndarray:
        until = time.monotonic() + 10.0
        while time.monotonic() < until:
            row = owner_conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE usename = 'haki_app' "
                "AND state <> 'idle' AND query LIKE %s",
                ("%set_config('haki.key_hash'%",)).fetchone()
            if row and row[0]:
                seen.append(True)
                return Q
            time.sleep(0.01)
        seen.append(False)
        return Q

    result = assemble(_request(project_id), compute_in_background(embed), db=app_db,
                      config=replace(CONFIG, parallel_arms=True))
    assert seen == [True], "the side's transaction had not opened while the vector waited"
    assert result.facts_served > 0


def test_a_failed_embedding_fails_the_call_and_writes_nothing(
    seed: Seeder, app_db: Database, owner_conn: psycopg.Connection, project_id: str,
) -> None:
    _seed(seed)
    failed: Future[QueryVector] = Future()
    failed.set_exception(RuntimeError("model file is corrupt"))
    with pytest.raises(RuntimeError, match="corrupt"):
        assemble(_request(project_id), failed, db=app_db, config=CONFIG)
    calls = owner_conn.execute(
        "SELECT count(*) FROM context_calls WHERE project_id = %s", (project_id,)).fetchone()
    assert calls == (0,)
    # The connection is left sound: the next call succeeds.
    assert assemble(_request(project_id), QueryVector(Q), db=app_db,
                    config=CONFIG).facts_served > 0


def test_python_cosine_distance_matches_pgvector(owner_conn: psycopg.Connection) -> None:
    rng = np.random.default_rng(7)
    pairs = [(rng.standard_normal(384).astype(np.float32),
              rng.standard_normal(384).astype(np.float32)) for _ in range(50)]
    pairs.append((Q, Q))
    pairs.append((Q, -Q))
    for a, b in pairs:
        row = owner_conn.execute("SELECT %s::vector <=> %s::vector", (a, b)).fetchone()
        assert row is not None
        assert cosine_distance(a.astype(np.float64), b) == pytest.approx(row[0], abs=1e-6)


def test_concurrent_calls_embed_in_parallel_threads_without_mixing_vectors(
    seed: Seeder, app_db: Database, project_id: str, db_urls: dict, tenant_key: str,
) -> None:
    """Two calls at once, each with its own pending vector: each packet is its own query's."""
    _seed(seed)
    far = unit_vector(300)
    results: dict[str, object] = {}
    barrier = threading.Barrier(2)

    def call(name: str, vector: np.ndarray) -> None:
        from haki.db.connection import acting_for
        db = Database(app_db.conninfo())
        try:
            with acting_for(tenant_key):
                def embed() -> np.ndarray:
                    barrier.wait(timeout=10)
                    return vector
                results[name] = assemble(_request(project_id), compute_in_background(embed),
                                         db=db, config=CONFIG)
        finally:
            db.close()

    threads = [threading.Thread(target=call, args=(n, v)) for n, v in (("q", Q), ("far", far))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    expected = {name: assemble(_request(project_id), QueryVector(vector), db=app_db,
                               config=CONFIG).response.packet
                for name, vector in (("q", Q), ("far", far))}
    assert expected["q"] != expected["far"], "the two queries should give different packets"
    for name in expected:
        assert results[name].response.packet == expected[name]  # type: ignore[attr-defined]


def test_a_vector_computed_before_the_call_adds_its_cost_not_its_age(
    seed: Seeder, app_db: Database, project_id: str, embedder: Embedder,
) -> None:
    """The call's latency (recorded in its row) is the embedding's cost plus the call, however
    long ago the vector was computed — and, for a background embedding, runs from its start."""
    _seed(seed)
    # Open the handle's two connections first: opening them is no part of what is measured.
    assemble(_request(project_id), QueryVector(Q), db=app_db, config=CONFIG)
    for ready in (QueryVector(Q, embed_ms=250.0), embed_query(embedder, "who paid?")):
        time.sleep(0.5)
        total = assemble(_request(project_id), ready, db=app_db, config=CONFIG
                         ).timings_ms["total"]
        # The cost is added; the 500 ms the vector waited are not.
        assert ready.embed_ms <= total < ready.embed_ms + 400.0

    def slow() -> np.ndarray:
        time.sleep(0.3)
        return Q

    overlapped = assemble(_request(project_id), compute_in_background(slow), db=app_db,
                          config=CONFIG).timings_ms
    assert overlapped["embed"] >= 300.0 and overlapped["total"] >= overlapped["embed"]
    assert overlapped["total"] < overlapped["embed"] + 400.0  # counted once, not added
