"""The process-wide connection: reused, replaced when dropped, 503 when the database is gone."""

from collections.abc import Callable

import psycopg
import pytest
from psycopg import pq

from haki.db import Database, Role
from haki.errors import ServiceUnavailable


def test_connection_is_reused_across_transactions(app_db: Database, project_id: str) -> None:
    with app_db.transaction(project_id) as first:
        pid = first.info.backend_pid
    with app_db.transaction(project_id) as second:
        assert second.info.backend_pid == pid


def test_no_server_side_prepared_statements(app_db: Database, project_id: str) -> None:
    for _ in range(8):  # psycopg would prepare after 5 executions by default
        with app_db.transaction(project_id) as conn:
            conn.execute("SELECT count(*) FROM facts WHERE subject_id = %s", ("x",))
    with app_db.transaction(project_id) as conn:
        assert conn.execute("SELECT count(*) FROM pg_prepared_statements").fetchone() == (0,)


def _kill(db_urls: dict[Role, str], pid: int) -> None:
    with psycopg.connect(db_urls[Role.OWNER], autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))


@pytest.mark.parametrize("pipeline", [False, True])
def test_dropped_connection_is_replaced(
    db_urls: dict[Role, str], project_id: str, pipeline: bool, tenant_key: str,
    open_database: Callable[[str], Database],
) -> None:
    """Plain transactions check liveness in their first round trip; pipelined ones probe a
    connection that has been idle (here: any idleness counts)."""
    db = Database(db_urls[Role.APP], probe_after_idle_s=0.0)
    try:
        with db.transaction(project_id) as conn:
            pid = conn.info.backend_pid
        _kill(db_urls, pid)
        with db.transaction(project_id, pipeline=pipeline) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
            assert conn.info.backend_pid != pid
    finally:
        db.close()


def test_a_busy_pipelined_handle_fails_one_call_when_its_connection_dies_then_recovers(
    app_db: Database, db_urls: dict[Role, str], project_id: str
) -> None:
    """No probe on a connection just used (its first round trip carries real work): the call
    that finds it dead is a 503, and the next one reconnects."""
    with app_db.transaction(project_id, pipeline=True) as conn:
        pid = conn.info.backend_pid
    _kill(db_urls, pid)
    with pytest.raises(ServiceUnavailable), app_db.transaction(project_id, pipeline=True) as conn:
        conn.execute("SELECT 1").fetchone()
    with app_db.transaction(project_id, pipeline=True) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
        assert conn.info.backend_pid != pid


def test_a_failed_pipelined_transaction_writes_nothing_and_leaves_the_handle_clean(
    app_db: Database, project_id: str
) -> None:
    with pytest.raises(RuntimeError), app_db.transaction(project_id, pipeline=True) as conn:
        conn.execute("INSERT INTO stats_watermark DEFAULT VALUES")  # refused: no grant
        raise RuntimeError("the caller fails")
    conn = app_db.connection()
    assert conn.info.transaction_status == pq.TransactionStatus.IDLE
    with app_db.transaction(project_id, pipeline=True) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)


@pytest.mark.parametrize("pipeline", [False, True])
def test_a_transaction_not_durable_commits_without_waiting_for_the_flush_and_only_itself(
    app_db: Database, project_id: str, pipeline: bool
) -> None:
    """``durable=False`` turns ``synchronous_commit`` off for that transaction alone: the
    connection's next transaction, on the same backend, waits for its flush again."""
    settings = []
    for durable in (False, True, False):
        with app_db.transaction(project_id, pipeline=pipeline, durable=durable) as conn:
            settings.append(conn.execute("SHOW synchronous_commit").fetchone()[0])
    assert settings == ["off", "on", "off"]
    with app_db.transaction(project_id) as conn:
        assert conn.execute("SHOW synchronous_commit").fetchone() == ("on",)


def test_unreachable_database_is_service_unavailable(tmp_path: object) -> None:
    db = Database(f"postgresql://haki_app@/haki?host={tmp_path}")
    with pytest.raises(ServiceUnavailable) as info, db.transaction("p"):
        pass
    assert info.value.code == "service_unavailable"
    assert info.value.status == 503


def test_protocol_counts_are_what_crossed_the_wire(app_db: Database, project_id: str) -> None:
    """Plain mode: BEGIN, scope, two statements, COMMIT, each waited for (5 round trips).
    Pipelined, three statements queued until the pipeline ends are one round trip."""
    with count_protocol(app_db.connection()) as plain, app_db.transaction(project_id) as conn:
        conn.execute("SELECT 1")
        conn.execute("SELECT 2")
    assert (plain.statements, plain.transaction_control, plain.round_trips) == (3, 2, 5)

    conn = app_db.connection()
    with count_protocol(app_db.connection()) as piped, conn.pipeline():
        for n in range(3):
            conn.execute("SELECT %s::int", (n,))
    assert (piped.statements, piped.transaction_control) == (3, 0)
    assert piped.round_trips == 1
