"""The vector arm serves a scope's nearest facts, also when its graph search starts far away.

A graph of 6,000 facts: a crowd subject of 4,000 in three clusters and a slice subject of 2,000
in a fourth, far from them (large enough for the planner to search the graph for it). A
question near the crowd, asked of the slice, starts its graph search among the crowd: the
iterative scan filters crowd rows out, and the slice's rows it reaches come in the order it
finds them, not nearest first. With the scan budget spent among the crowd
(``hnsw_max_scan_tuples`` 600 here; 20,000 is for a slice of a large table) the arm used to
serve one fact of the slice; with a larger budget, 15-20 of its 64 nearest. The arm reads
further, keeps the nearest exactly, and reads the scope exactly when the search comes back
short.
"""

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import psycopg
import pytest

from haki.assembler import DEFAULT_CONFIG, RetrievalConfig
from haki.db import Database, Role
from haki.db.connection import connect
from haki.db.migrate import apply_migrations
from tests.conftest import acting_as_tenant
from tests.integration.conftest import Asker, load_facts_graph

PROJECT = "floor"
DIM = 384
CROWD, CROWD_SIZE = "crowd", 4_000
SLICE, SLICE_SIZE = "slice", 2_000
#: The vector arm's depth at the smallest budget (``RetrievalConfig.vector_depth``).
DEPTH = 96
#: Vector arm only, with a small scan budget (20,000 is for a slice of a large table).
VECTOR_ONLY: RetrievalConfig = replace(
    DEFAULT_CONFIG, use_text_arm=False, use_episodes=False, use_neighbours=False,
    hnsw_max_scan_tuples=600)


def _around(rng: np.random.Generator, centroids: np.ndarray, picks: np.ndarray) -> np.ndarray:
    v = centroids[picks] + 0.9 * rng.standard_normal((len(picks), DIM)) / np.sqrt(DIM)
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def floor_db(fresh_database: Callable[[], dict[Role, str]]
             ) -> tuple[dict[Role, str], np.ndarray, np.random.Generator]:
    urls = fresh_database()
    apply_migrations(urls[Role.OWNER])
    rng = np.random.default_rng(7)
    centroids = rng.standard_normal((4, DIM))
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
    rows = ([(CROWD, v) for v in _around(rng, centroids, rng.integers(1, 4, CROWD_SIZE))]
            + [(SLICE, v) for v in _around(rng, centroids, np.zeros(SLICE_SIZE, dtype=int))])
    load_facts_graph(urls[Role.OWNER], PROJECT,
                     [rows[i] for i in rng.permutation(len(rows))])
    return urls, centroids, rng


def _exact_top(conn: psycopg.Connection, subject: str, query: np.ndarray) -> set[str]:
    with conn.transaction():
        conn.execute("SET LOCAL enable_indexscan = off")
        rows = conn.execute(
            "SELECT id FROM facts WHERE project_id = %s AND subject_id = %s "
            "AND status = 'active' ORDER BY embedding <=> %s LIMIT %s",
            (PROJECT, subject, query, DEPTH)).fetchall()
    return {str(r[0]) for r in rows}


def _planned_through_graph(db: Database, query: np.ndarray) -> bool:
    """Whether the runtime role's plan for the slice's nearest facts searches the graph."""
    with db.transaction(PROJECT) as conn:
        plan = conn.execute(
            "EXPLAIN SELECT id FROM facts WHERE project_id = %s AND subject_id = %s "
            "AND status = 'active' ORDER BY embedding <=> %s LIMIT %s",
            (PROJECT, SLICE, query, DEPTH)).fetchall()
    return any("facts_embedding_hnsw" in line for (line,) in plan)


def test_a_slice_searched_from_far_away_gets_its_nearest_facts(
        floor_db: tuple[dict[Role, str], np.ndarray, np.random.Generator]) -> None:
    urls, centroids, rng = floor_db
    db = Database(urls[Role.APP])
    try:
        with connect(urls[Role.OWNER]) as owner, acting_as_tenant(urls[Role.OWNER], PROJECT):
            ask = Asker(db, PROJECT)
            for query in _around(rng, centroids, np.array([1, 2, 3])):
                # The graph, not an exact read of the slice: the case this is about.
                assert _planned_through_graph(db, query)
                exact = _exact_top(owner, SLICE, query)
                result = ask("q", query, subject_id=SLICE, budget=1, config=VECTOR_ONLY)
                assert VECTOR_ONLY.vector_depth(1) == DEPTH
                served = {str(r[0]) for r in owner.execute(
                    "SELECT fact_id FROM context_trace_decisions WHERE trace_id = %s",
                    (result.response.trace_id,)).fetchall()}
                assert len(exact) == DEPTH
                assert served == exact
    finally:
        db.close()


def test_a_scope_searched_from_nearby_keeps_its_graph_answer(
        floor_db: tuple[dict[Role, str], np.ndarray, np.random.Generator]) -> None:
    """The crowd asked near itself: the graph search fills the depth with the nearest
    facts."""
    urls, centroids, rng = floor_db
    db = Database(urls[Role.APP])
    try:
        with connect(urls[Role.OWNER]) as owner, acting_as_tenant(urls[Role.OWNER], PROJECT):
            ask = Asker(db, PROJECT)
            for query in _around(rng, centroids, np.array([1, 2])):
                exact = _exact_top(owner, CROWD, query)
                result = ask("q", query, subject_id=CROWD, budget=1, config=VECTOR_ONLY)
                served = {str(r[0]) for r in owner.execute(
                    "SELECT fact_id FROM context_trace_decisions WHERE trace_id = %s",
                    (result.response.trace_id,)).fetchall()}
                assert len(served & exact) >= 0.95 * DEPTH
    finally:
        db.close()
