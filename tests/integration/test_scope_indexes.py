"""Scope indexes (haki.db.scope_indexes): a partial HNSW graph and a partial GIN text index per
big subject, built and dropped by the reconciler as the owner, searched by the planner for that
subject's statements, the graph's rows setting the search breadth. Each test has a database of
its own: the reconciler looks at every scope of the tables, and its indexes must not reach
other tests."""

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from haki.assembler import DEFAULT_CONFIG, arms
from haki.db import Database, Role
from haki.db.scope_indexes import (
    ADVISORY_LOCK_KEY,
    KINDS,
    ScopeIndexPolicy,
    Table,
    graph_name,
    index_name,
    reconcile_scope_indexes,
)
from haki.models import ContextRequest
from haki.settings import Settings, get_settings
from haki_local.cli import main
from tests.conftest import acting_as_tenant, eventually

#: The vector arm's search over facts, as its SQL function writes it (the scope's partial
#: graph matches the same predicate).
NEAREST_IN_SCOPE = """
SELECT f.id FROM facts AS f
WHERE f.project_id = %(project_id)s AND f.subject_id = %(subject_id)s AND f.status = 'active'
  AND (f.valid_to IS NULL OR f.valid_to > now())
ORDER BY f.embedding <=> %(query_vector)s
LIMIT 96
"""

#: A subject id that must travel as a quoted literal, never as SQL.
ODD = "o'brien; DROP TABLE facts; --"
POLICY = ScopeIndexPolicy(min_rows=20, max_share=0.7)


def _vector(rng: np.random.Generator) -> np.ndarray:
    v = rng.standard_normal(384).astype(np.float32)
    return v / np.linalg.norm(v)


def _seed(conn: psycopg.Connection, project: str, subject: str, facts: int, events: int,
          rng: np.random.Generator) -> None:
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO facts (id, project_id, subject_id, predicate, value, embedding) "
            "VALUES (%s, %s, %s, 'note', %s, %s)",
            [(uuid.uuid4(), project, subject, json.dumps(f"{subject} fact {i}"), _vector(rng))
             for i in range(facts)])
        cur.executemany(
            "INSERT INTO events (id, project_id, subject_id, kind, payload, occurred_at, "
            "embedding) VALUES (%s, %s, %s, 'conversation.message', %s, %s, %s)",
            [(uuid.uuid4(), project, subject, json.dumps({"text": f"turn {i}"}),
              datetime(2026, 1, 1, tzinfo=UTC), _vector(rng)) for i in range(events)])


@pytest.fixture
def urls(migrated_database: Callable[[], dict[Role, str]]) -> Iterator[dict[Role, str]]:
    """A migrated database holding: p1/big 60 facts + 40 events, p1/ODD 30 facts, p1/small 8
    facts, p2/big 10 facts + 30 events (facts 108 in all, events 70)."""
    urls = migrated_database()
    rng = np.random.default_rng(7)
    with psycopg.connect(urls[Role.OWNER], autocommit=True) as conn:
        register_vector(conn)
        _seed(conn, "p1", "big", 60, 40, rng)
        _seed(conn, "p1", ODD, 30, 0, rng)
        _seed(conn, "p1", "small", 8, 0, rng)
        _seed(conn, "p2", "big", 10, 30, rng)
        conn.execute("ANALYZE facts, events")
    yield urls


def _indexes(owner_url: str) -> dict[str, tuple[str, bool]]:
    """name → (index definition, valid) of every scope index."""
    with psycopg.connect(owner_url) as conn:
        rows = conn.execute(
            "SELECT c.relname, pg_get_indexdef(c.oid), i.indisvalid FROM pg_index AS i "
            "JOIN pg_class AS c ON c.oid = i.indexrelid "
            "WHERE c.relname ~ '_scope_(hnsw|gin)_'").fetchall()
    return {name: (definition, valid) for name, definition, valid in rows}


def _own(table: Table, project: str, subject: str) -> set[str]:
    return {index_name(table, kind, project, subject) for kind in KINDS}


#: p1/small (8 facts) is under the floor, p2/big's 10 facts too; p1/big's 40 events are 57%
#: of the events, under the share.
EXPECTED = (_own("facts", "p1", "big") | _own("facts", "p1", ODD) | _own("events", "p1", "big")
            | _own("events", "p2", "big"))


def test_big_scopes_get_indexes_of_their_own_and_a_second_run_keeps_them(
        urls: dict[Role, str]) -> None:
    first = reconcile_scope_indexes(urls[Role.OWNER], POLICY)
    assert set(first.created) == EXPECTED and not first.dropped and first.ran
    indexes = _indexes(urls[Role.OWNER])
    assert set(indexes) == EXPECTED and all(valid for _, valid in indexes.values())
    # The ids are in the predicate, quoted, never in a name.
    graph = indexes[graph_name("facts", "p1", "big")][0]
    assert "WHERE ((project_id = 'p1'::text) AND (subject_id = 'big'::text))" in graph
    assert "USING hnsw (embedding vector_cosine_ops)" in graph
    text = indexes[index_name("facts", "gin", "p1", "big")][0]
    assert "USING gin (search_vector) WHERE ((project_id = 'p1'::text)" in text
    assert "'o''brien; DROP TABLE facts; --'::text" in indexes[graph_name("facts", "p1", ODD)][0]
    assert not any("big" in name or "p1" in name or "brien" in name for name in indexes)
    second = reconcile_scope_indexes(urls[Role.OWNER], POLICY)
    assert not second.created and not second.dropped and set(second.kept) == EXPECTED
    with psycopg.connect(urls[Role.OWNER]) as conn:  # the tables' own indexes are untouched
        assert conn.execute("SELECT count(*) FROM pg_indexes WHERE indexname IN "
                            "('facts_scope_idx', 'events_scope_idx')").fetchone() == (2,)


def test_the_planner_searches_the_scope_graph_at_its_breadth(urls: dict[Role, str]) -> None:
    reconcile_scope_indexes(urls[Role.OWNER], POLICY)
    config = replace(DEFAULT_CONFIG, hnsw_rows_per_ef=1, hnsw_ef_search_min=1)
    vector = _vector(np.random.default_rng(1))
    db = Database(urls[Role.APP])
    try:
        with acting_as_tenant(urls[Role.OWNER], "p1"):
            for subject, graph_rows in (("big", "60"), ("small", None)):
                request = ContextRequest(project_id="p1", subject_id=subject, query="q")
                params = {"project_id": "p1", "subject_id": subject, "query_vector": vector}
                with db.transaction("p1") as conn:
                    # The arm sets the breadth of the graph it searches for the transaction.
                    arms.nearest_facts(conn, request, config, vector).fetchall()
                    ef = conn.execute("SHOW hnsw.ef_search").fetchone()
                    # With a graph, its 60 rows; without, the table's 108.
                    assert ef == (graph_rows or "108",)
                    # Scopes this small are scanned exactly (as under ~10k rows in a real
                    # table); with the exact plans off, the planner picks between graphs.
                    conn.execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off; "
                                 "SET LOCAL enable_bitmapscan = off")
                    plan = "\n".join(row[0] for row in conn.execute(
                        "EXPLAIN " + NEAREST_IN_SCOPE, params).fetchall())
                own = graph_name("facts", "p1", subject)
                if graph_rows is None:
                    assert "facts_embedding_hnsw" in plan and "_scope_hnsw_" not in plan, plan
                else:
                    assert own in plan and "facts_embedding_hnsw" not in plan, plan
    finally:
        db.close()


def test_the_scope_graph_finds_what_the_exact_scan_found(urls: dict[Role, str]) -> None:
    """The nearest facts and events of p1/big (and the turns around the nearest events)
    through its own graphs — 60 and 40 rows searched at breadth 100, so exactly — are the
    rows the exact scan returned before the graphs existed, at the same distances."""
    request = ContextRequest(project_id="p1", subject_id="big", query="q")
    vector = _vector(np.random.default_rng(3))
    db = Database(urls[Role.APP])

    def nearest(*, graphs: bool) -> list[tuple[object, ...]]:
        with db.transaction("p1") as conn:
            if graphs:
                conn.execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off; "
                             "SET LOCAL enable_bitmapscan = off")
            rows = [*arms.nearest_facts(conn, request, DEFAULT_CONFIG, vector).fetchall(),
                    *arms.nearest_events(conn, request, DEFAULT_CONFIG, vector).fetchall()]
        return sorted((row["item"], str(row["id"]), round(row["distance"], 6)) for row in rows)

    try:
        with acting_as_tenant(urls[Role.OWNER], "p1"):
            before = nearest(graphs=False)
            reconcile_scope_indexes(urls[Role.OWNER], POLICY)
            after = nearest(graphs=True)
    finally:
        db.close()
    assert len([row for row in before if row[0] == "fact"]) == 60
    assert before == after


def _index_scans(owner_url: str, names: list[str]) -> dict[str, int]:
    with psycopg.connect(owner_url, autocommit=True) as conn:
        return dict(conn.execute(
            "SELECT indexrelname, idx_scan FROM pg_stat_user_indexes "
            "WHERE indexrelname = ANY (%s)", (names,)).fetchall())


def test_the_nearest_facts_function_plans_each_call_with_its_scope(
        urls: dict[Role, str]) -> None:
    """``haki_nearest_facts`` runs with custom plans (``force_custom_plan``): called again
    and again on one connection — past the five calls after which a cached plan may turn
    generic — the big subject's calls search its own graph, the other subject's the table's
    (index scan counters, flushed when the connection closes)."""
    reconcile_scope_indexes(urls[Role.OWNER], POLICY)
    own, table = graph_name("facts", "p1", "big"), "facts_embedding_hnsw"
    before = _index_scans(urls[Role.OWNER], [own, table])
    vector = _vector(np.random.default_rng(5))
    db = Database(urls[Role.APP])
    try:
        with acting_as_tenant(urls[Role.OWNER], "p1"):
            for subject in ("big", "small") * 8:
                request = ContextRequest(project_id="p1", subject_id=subject, query="q")
                with db.transaction("p1") as conn:
                    # (scopes this small are scanned exactly: graphs only, as in a big table)
                    conn.execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off; "
                                 "SET LOCAL enable_bitmapscan = off")
                    assert arms.nearest_facts(conn, request, DEFAULT_CONFIG, vector).fetchall()
    finally:
        db.close()
    # Index statistics reach the shared view a little after the scans.
    eventually(lambda: _index_scans(urls[Role.OWNER], [own, table]) != before,
               "an index scan counted")
    after = _index_scans(urls[Role.OWNER], [own, table])
    assert after[own] - before[own] == 8
    assert after[table] - before[table] == 8


def test_indexes_follow_their_scopes_down_with_hysteresis(urls: dict[Role, str]) -> None:
    reconcile_scope_indexes(urls[Role.OWNER], POLICY)
    odd = _own("facts", "p1", ODD)
    with psycopg.connect(urls[Role.OWNER], autocommit=True) as conn:
        # 30 → 12 facts: under min_rows (20), above half of it: the graph stays.
        conn.execute("DELETE FROM facts WHERE id IN (SELECT id FROM facts WHERE subject_id = %s "
                     "ORDER BY id LIMIT 18)", (ODD,))
    run = reconcile_scope_indexes(urls[Role.OWNER], POLICY)
    assert odd <= set(run.kept) and not run.dropped
    with psycopg.connect(urls[Role.OWNER], autocommit=True) as conn:
        conn.execute("DELETE FROM facts WHERE id IN (SELECT id FROM facts WHERE subject_id = %s "
                     "ORDER BY id LIMIT 3)", (ODD,))  # 9 < 10: dropped
    run = reconcile_scope_indexes(urls[Role.OWNER], POLICY)
    assert set(run.dropped) == odd and not odd & set(_indexes(urls[Role.OWNER]))
    # No graphs allowed: every one goes.
    run = reconcile_scope_indexes(urls[Role.OWNER], replace(POLICY, max_scopes=0))
    assert set(run.dropped) == EXPECTED - odd and not _indexes(urls[Role.OWNER])


def test_an_interrupted_build_is_dropped_and_built_again(
        urls: dict[Role, str], pg_superuser_url: str) -> None:
    reconcile_scope_indexes(urls[Role.OWNER], POLICY)
    name = graph_name("events", "p2", "big")
    database = conninfo_to_dict(urls[Role.OWNER])["dbname"]
    superuser = make_conninfo(pg_superuser_url, dbname=database)
    with psycopg.connect(superuser, autocommit=True) as conn:
        # What a concurrent build cut off leaves behind: the index, marked invalid.
        conn.execute("UPDATE pg_index SET indisvalid = false "
                     "WHERE indexrelid = to_regclass(%s)", (name,))
    assert _indexes(urls[Role.OWNER])[name][1] is False
    run = reconcile_scope_indexes(urls[Role.OWNER], POLICY)
    assert run.dropped == [name] and run.created == [name]
    assert _indexes(urls[Role.OWNER])[name][1] is True


def test_dry_runs_deadlines_and_a_held_lock_change_nothing(urls: dict[Role, str]) -> None:
    dry = reconcile_scope_indexes(urls[Role.OWNER], POLICY, dry_run=True)
    assert set(dry.created) == EXPECTED and not _indexes(urls[Role.OWNER])
    late = reconcile_scope_indexes(urls[Role.OWNER], POLICY, deadline=0.0)
    assert set(late.deferred) == EXPECTED and not late.created
    assert not _indexes(urls[Role.OWNER])
    with psycopg.connect(urls[Role.OWNER], autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", (ADVISORY_LOCK_KEY,))
        busy = reconcile_scope_indexes(urls[Role.OWNER], POLICY)
    assert not busy.ran and not busy.created and not _indexes(urls[Role.OWNER])


def test_the_policy_comes_from_the_settings() -> None:
    policy = ScopeIndexPolicy.from_settings(Settings(
        scope_index_min_rows=500, scope_index_max_share=0.25, scope_indexes_max=3))
    assert (policy.min_rows, policy.max_share, policy.max_scopes) == (500, 0.25, 3)
    assert policy.keep_rows == 250
    with pytest.raises(ValueError):
        ScopeIndexPolicy(max_share=0.0)


def test_the_cli_builds_them_as_the_owner(
        urls: dict[Role, str], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HAKI_DATABASE_URL", urls[Role.OWNER])
    monkeypatch.setenv("HAKI_SCOPE_INDEX_MIN_ROWS", "20")
    monkeypatch.setenv("HAKI_SCOPE_INDEX_MAX_SHARE", "0.7")
    get_settings.cache_clear()
    try:
        assert main(["scope-indexes", "--dry-run"]) == 0
        assert "would build 8, would drop 0" in capsys.readouterr().out
        assert not _indexes(urls[Role.OWNER])
        assert main(["scope-indexes"]) == 0
        out = capsys.readouterr().out
        assert "built 8, dropped 0, kept 0, failed 0" in out
        assert "p1" not in out and "brien" not in out
        assert set(_indexes(urls[Role.OWNER])) == EXPECTED
    finally:
        get_settings.cache_clear()


def test_the_text_arm_searches_the_scope_text_index(urls: dict[Role, str]) -> None:
    """The text arm's candidate query (``haki_idf_search`` EXECUTEs it with its values) finds
    p1/big's matches in its own GIN index rather than ANDing the table's with a bitmap of the
    whole scope, and the arm returns the same rows as before the index existed."""
    matched = ("SELECT f.id FROM facts AS f WHERE f.project_id = 'p1' AND f.subject_id = 'big' "
               "AND f.status = 'active' AND (f.valid_to IS NULL OR f.valid_to > now()) "
               "AND f.search_vector @@ to_tsquery('simple', '7')")  # one row: "big fact 7"
    request = ContextRequest(project_id="p1", subject_id="big", query="fact 7")
    db = Database(urls[Role.APP])

    def text_arm() -> list[tuple[object, ...]]:
        with db.transaction("p1") as conn:
            calls = [[(r["item"], r["id"], r["text_arm_rank"], r["text_rank"]) for r in
                      arms.text_arm(conn, request, DEFAULT_CONFIG).fetchall()]
                     for _ in range(8)]
        # Past the calls after which the connection keeps a generic plan: the same rows.
        assert all(rows == calls[0] for rows in calls)
        return calls[0]

    try:
        with acting_as_tenant(urls[Role.OWNER], "p1"):
            before = text_arm()
            reconcile_scope_indexes(urls[Role.OWNER], POLICY)
            after = text_arm()
    finally:
        db.close()
    assert before and before == after
    with psycopg.connect(urls[Role.OWNER]) as conn:
        conn.execute("SET enable_seqscan = off")  # a tiny table: no seq scan
        plan = str(conn.execute("EXPLAIN " + matched).fetchall())
        assert conn.execute(matched).fetchall()
    assert index_name("facts", "gin", "p1", "big") in plan and "BitmapAnd" not in plan, plan


def test_a_build_blocked_by_a_lock_fails_alone_and_the_next_run_builds_it(
        urls: dict[Role, str], caplog: pytest.LogCaptureFixture) -> None:
    """A lock held on ``facts`` (a long transaction, a DDL) makes its builds fail after the
    policy's lock timeout instead of holding the task; the events' builds go on, the failure
    is logged by index name only, and the next run builds what failed."""
    quick = replace(POLICY, lock_timeout="200ms")
    with psycopg.connect(urls[Role.OWNER]) as holder:
        holder.execute("LOCK TABLE facts IN SHARE MODE")  # conflicts with a concurrent build
        run = reconcile_scope_indexes(urls[Role.OWNER], quick)
    facts = {name for name in EXPECTED if name.startswith("facts_")}
    assert set(run.failed) == facts and set(run.created) == EXPECTED - facts
    assert "55P03" in caplog.text and "brien" not in caplog.text and "'p1'" not in caplog.text
    again = reconcile_scope_indexes(urls[Role.OWNER], quick)
    assert not again.failed and facts <= set(again.created) | set(again.kept)
    assert {name for name, (_, valid) in _indexes(urls[Role.OWNER]).items() if valid} == EXPECTED
