"""Schema behaviour: the generated search vector, CHECK constraints, and the indexes the
retrieval queries rely on."""

import json

import numpy as np
import psycopg
import pytest

from haki.db import Role
from haki.db.connection import connect
from tests.conftest import eventually
from tests.integration.conftest import unit_vector


def _insert_fact(conn: psycopg.Connection, project: str, predicate: str, value: object,
                 seed: int = 0, subject: str = "s1") -> str:
    row = conn.execute(
        "INSERT INTO facts (project_id, subject_id, predicate, value, embedding) "
        "VALUES (%s, %s, %s, %s, %s) RETURNING id",
        (project, subject, predicate, json.dumps(value), unit_vector(seed)),
    ).fetchone()
    assert row is not None
    return str(row[0])


def test_search_vector_filled_on_insert_and_update(
    owner_conn: psycopg.Connection, project_id: str
) -> None:
    fact_id = _insert_fact(owner_conn, project_id, "preferred_language", {"lang": "Français"})
    sv = owner_conn.execute("SELECT search_vector::text FROM facts WHERE id = %s",
                            (fact_id,)).fetchone()
    assert sv is not None
    assert "'preferred':1A" in sv[0] and "'language':2A" in sv[0] and "'français'" in sv[0]
    owner_conn.execute("UPDATE facts SET value = %s WHERE id = %s",
                       (json.dumps({"lang": "English", "since": 2021}), fact_id))
    sv = owner_conn.execute("SELECT search_vector::text FROM facts WHERE id = %s",
                            (fact_id,)).fetchone()
    assert sv is not None
    assert "'english'" in sv[0] and "'2021'" in sv[0] and "français" not in sv[0]


def test_search_vector_cannot_be_written(owner_conn: psycopg.Connection, project_id: str) -> None:
    with pytest.raises(psycopg.errors.GeneratedAlways):
        owner_conn.execute(
            "INSERT INTO facts (project_id, subject_id, predicate, value, embedding, search_vector)"
            " VALUES (%s, 's', 'p', '1', %s, 'x')", (project_id, unit_vector(1)))


@pytest.mark.parametrize(
    ("column", "bad"),
    [("status", "archived"), ("volatility", "sometimes"), ("confidence", 1.5)],
)
def test_enum_like_columns_are_checked(
    owner_conn: psycopg.Connection, project_id: str, column: str, bad: object
) -> None:
    with pytest.raises(psycopg.errors.CheckViolation):
        owner_conn.execute(
            f"INSERT INTO facts (project_id, subject_id, predicate, value, embedding, {column}) "
            "VALUES (%s, 's', 'p', '1', %s, %s)", (project_id, unit_vector(2), bad))


def _bulk_facts(conn: psycopg.Connection, project_id: str, subjects: int,
                seed: int) -> np.ndarray:
    """3,000 facts ``word<i>`` with random unit vectors over ``subjects`` subjects, analyzed."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((3000, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    with conn.transaction(), conn.cursor().copy(
        "COPY facts (project_id, subject_id, predicate, value, embedding) FROM STDIN"
    ) as copy:
        for i, v in enumerate(vectors):
            copy.write_row((project_id, f"s{i % subjects}", f"word{i}", json.dumps(f"v{i}"), v))
    conn.execute("ANALYZE facts")
    return vectors


def test_explain_uses_hnsw_and_gin(db_urls: dict[Role, str], project_id: str) -> None:
    """With enough rows the planner picks the HNSW index for ORDER BY <=> LIMIT and the GIN
    index for @@ — the two phase-1 arms."""
    with connect(db_urls[Role.OWNER]) as conn:
        vectors = _bulk_facts(conn, project_id, subjects=50, seed=7)
        with conn.transaction():
            conn.execute("SET LOCAL enable_seqscan = off")
            vec_plan = "\n".join(r[0] for r in conn.execute(
                "EXPLAIN SELECT id FROM facts ORDER BY embedding <=> %s LIMIT 64",
                (vectors[0],)))
            fts_plan = "\n".join(r[0] for r in conn.execute(
                "EXPLAIN SELECT id FROM facts WHERE search_vector @@ "
                "to_tsquery('simple', 'word17')"))
    assert "facts_embedding_hnsw" in vec_plan
    assert "facts_search_vector_gin" in fts_plan


def _index_scans(conn: psycopg.Connection, index: str) -> int:
    conn.execute("SELECT pg_stat_clear_snapshot()")
    row = conn.execute(
        "SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = %s", (index,)).fetchone()
    assert row is not None
    return int(row[0])


def test_runtime_role_reaches_both_indexes(
    db_urls: dict[Role, str], project_id: str, tenant_key: str
) -> None:
    """Under row-level security the GIN index cannot serve a leaky ``@@`` for haki_app, which
    is why the text arm goes through ``haki_idf_search`` (SECURITY DEFINER): a real context call as
    the runtime role must scan the GIN index (cumulative index statistics). HNSW ordering is
    not a filter, so RLS leaves it usable: EXPLAIN as haki_app shows it."""
    from haki.assembler import RetrievalConfig, assemble
    from haki.db import Database
    from haki.models import ContextRequest

    with connect(db_urls[Role.OWNER]) as owner:
        vectors = _bulk_facts(owner, project_id, subjects=1, seed=11)
        with owner.transaction():
            owner.execute("SET LOCAL enable_seqscan = off")
            leaky = "\n".join(r[0] for r in owner.execute(
                "EXPLAIN SELECT id FROM facts WHERE search_vector @@ to_tsquery('simple', 'x')"))
        assert "facts_search_vector_gin" in leaky  # the owner may use it...
        before = {i: _index_scans(owner, i) for i in ("facts_search_vector_gin",)}
        db = Database(db_urls[Role.APP])
        result = assemble(
            ContextRequest(project_id=project_id, subject_id="s0", query="word17 please",
                           purpose="t"),
            lambda: vectors[0], db=db, config=RetrievalConfig())
        with db.transaction(project_id) as conn:
            conn.execute("SET LOCAL enable_seqscan = off")
            conn.execute("SET LOCAL enable_indexscan = on")
            vector_plan = "\n".join(r[0] for r in conn.execute(
                "EXPLAIN SELECT id FROM facts WHERE project_id = %s AND subject_id = 's0' "
                "ORDER BY embedding <=> %s LIMIT 64", (project_id, vectors[0])))
        db.close()
        assert "facts_embedding_hnsw" in vector_plan
        assert result.candidates > 0
        # Index statistics reach the shared view a little after the scans.
        eventually(lambda: all(_index_scans(owner, i) > before[i] for i in before),
                   f"a scan of each of {sorted(before)} counted")
