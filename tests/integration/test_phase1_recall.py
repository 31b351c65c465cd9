"""Phase-1 recall under multi-tenancy: the vector arm returns the true in-scope top 64 even when
the scope is a small slice of a large table.

100,000 facts over 501 subjects (one holding 20% of the table, 499 of ~160 facts, one of 30)
with clustered synthetic unit vectors; the arm's rows (read from the trace of a real
``assemble`` call asked for 64 rows, facts only, the full-text arm off) are compared with an
exact in-scope top 64.
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
from tests.integration.conftest import Asker

pytestmark = pytest.mark.slow

PROJECT = "recall"
DIM = 384
CENTROIDS = 200
BIG_SUBJECT, BIG_SIZE = "big", 20_000
MEDIUM_SUBJECTS, MEDIUM_SIZE = 499, 160
TINY_SUBJECT, TINY_SIZE = "tiny", 30
VECTOR_ONLY = replace(DEFAULT_CONFIG, vector_top_k=64, use_text_arm=False, use_episodes=False,
                      use_neighbours=False)


def _clustered(rng: np.random.Generator, centroids: np.ndarray, n: int) -> np.ndarray:
    picks = centroids[rng.integers(0, len(centroids), n)]
    v = picks + 0.35 * rng.standard_normal((n, DIM)).astype(np.float32) / np.sqrt(DIM) * 4
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def recall_db(fresh_database: Callable[[], dict[Role, str]]) -> tuple[dict[Role, str], np.ndarray]:
    urls = fresh_database()
    apply_migrations(urls[Role.OWNER])
    rng = np.random.default_rng(42)
    centroids = rng.standard_normal((CENTROIDS, DIM)).astype(np.float32)
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
    subjects = ([BIG_SUBJECT] * BIG_SIZE + [TINY_SUBJECT] * TINY_SIZE
                + [f"s{i:03d}" for i in range(MEDIUM_SUBJECTS) for _ in range(MEDIUM_SIZE)])
    order = rng.permutation(len(subjects))  # interleave subjects across the heap
    vectors = _clustered(rng, centroids, len(subjects))
    with connect(urls[Role.OWNER]) as conn:
        # Bulk load without the HNSW index, then build it once (minutes faster than inserting
        # into the graph row by row), with the migration's own definition.
        index_sql = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'facts_embedding_hnsw'"
        ).fetchone()
        assert index_sql is not None
        conn.execute("DROP INDEX facts_embedding_hnsw")
        with conn.transaction(), conn.cursor().copy(
            "COPY facts (project_id, subject_id, predicate, value, embedding) FROM STDIN "
            "WITH (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["text", "text", "text", "jsonb", "vector"])
            for i in order:
                copy.write_row((PROJECT, subjects[i], "note", '"synthetic"', vectors[i]))
        conn.execute("SET maintenance_work_mem = '512MB'")
        conn.execute(index_sql[0])
        conn.execute("ANALYZE facts")
    return urls, centroids


def _exact_top(conn: psycopg.Connection, subject: str, query: np.ndarray) -> list[str]:
    with conn.transaction():
        conn.execute("SET LOCAL enable_indexscan = off")
        conn.execute("SET LOCAL enable_bitmapscan = off")
        rows = conn.execute(
            "SELECT id FROM facts WHERE project_id = %s AND subject_id = %s "
            "AND status = 'active' ORDER BY embedding <=> %s LIMIT 64",
            (PROJECT, subject, query)).fetchall()
    return [str(r[0]) for r in rows]


def _arm_rows(ask: Asker, owner: psycopg.Connection, subject: str,
              query: np.ndarray, config: RetrievalConfig) -> list[str]:
    result = ask("q", query, subject_id=subject, budget=1, config=config)
    rows = owner.execute("SELECT fact_id FROM context_trace_decisions WHERE trace_id = %s",
                         (result.response.trace_id,)).fetchall()
    return [str(r[0]) for r in rows]


@pytest.mark.parametrize(("subject", "queries"), [
    (BIG_SUBJECT, 10),
    ("s017", 4), ("s250", 4), ("s498", 4),
    (TINY_SUBJECT, 3),
])
def test_vector_arm_recall_against_exact_top_64(
    recall_db: tuple[dict[Role, str], np.ndarray], subject: str, queries: int
) -> None:
    urls, centroids = recall_db
    rng = np.random.default_rng(hash(subject) % 2**32)
    db = Database(urls[Role.APP])
    recalls = []
    with connect(urls[Role.OWNER]) as owner, acting_as_tenant(urls[Role.OWNER], PROJECT):
        ask = Asker(db, PROJECT)
        for query in _clustered(rng, centroids, queries):
            exact = _exact_top(owner, subject, query)
            got = _arm_rows(ask, owner, subject, query, VECTOR_ONLY)
            assert len(exact) == min(64, TINY_SIZE if subject == TINY_SUBJECT else 64)
            recalls.append(len(set(got) & set(exact)) / len(exact))
    db.close()
    print(f"{subject}: mean recall {np.mean(recalls):.3f} min {min(recalls):.3f}")
    assert np.mean(recalls) >= 0.95
