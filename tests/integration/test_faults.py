"""Faults on the real embedded PostgreSQL: the database stopped mid-run, the connection killed
between retrieval and the trace write, a statement past the timeout, a broken model file.
(Two migration runners at once: ``test_migrations.py``.)"""

import importlib
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import psycopg
import pytest

from haki.assembler import DEFAULT_CONFIG, assemble
from haki.db import Database, Role
from haki.db.migrate import apply_migrations
from haki.embedding import get_embedder
from haki.errors import ConfigurationError, ServiceUnavailable
from haki.models import ContextRequest
from haki.settings import Settings, get_settings
from haki_local.embedded import embedded_role_url, ensure_database, start_embedded, stop_embedded
from tests.conftest import acting_as_tenant
from tests.integration.conftest import Seeder, unit_vector

Q = unit_vector(1)
#: The module (the package re-exports a function of the same name).
assemble_module = importlib.import_module("haki.assembler.assemble")


def _request(project_id: str) -> ContextRequest:
    return ContextRequest(project_id=project_id, subject_id="alice", query="anything",
                          purpose="test")


def test_connection_killed_before_the_trace_write_serves_nothing_and_writes_nothing(
    seed: Seeder, app_db: Database, owner_conn: psycopg.Connection, project_id: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seed.fact("note", "a fact", Q)
    original = assemble_module.write_trace

    def killed_first(conn: psycopg.Connection, *args: object, **kwargs: object) -> None:
        owner_conn.execute("SELECT pg_terminate_backend(%s)", (conn.info.backend_pid,))
        original(conn, *args, **kwargs)

    monkeypatch.setattr(assemble_module, "write_trace", killed_first)
    with pytest.raises(ServiceUnavailable):
        assemble(_request(project_id), lambda: Q, db=app_db, config=DEFAULT_CONFIG)
    for table in ("context_calls", "context_traces"):
        count = owner_conn.execute(
            f"SELECT count(*) FROM {table} WHERE project_id = %s", (project_id,)).fetchone()
        assert count == (0,), table
    monkeypatch.setattr(assemble_module, "write_trace", original)
    # The handle recovers on the next call: a new connection, a packet and its trace.
    served = assemble(_request(project_id), lambda: Q, db=app_db, config=DEFAULT_CONFIG)
    assert served.facts_served == 1


def test_the_side_connection_killed_serves_nothing_and_writes_nothing(
    seed: Seeder, app_db: Database, owner_conn: psycopg.Connection, project_id: str,
) -> None:
    """The nearest facts run on the handle's second connection: when it
    dies the call fails as a whole (503, no call row, no trace) and the next call opens a
    new one."""
    seed.fact("note", "a fact", Q)
    seed.event("conversation.message", {"text": "a turn"}, Q)
    assert assemble(_request(project_id), lambda: Q, db=app_db,
                    config=DEFAULT_CONFIG).episodes_served == 1
    side = app_db.sibling().connection()
    owner_conn.execute("SELECT pg_terminate_backend(%s)", (side.info.backend_pid,))
    # Killed between two calls: a connection used a moment ago is not probed first, so the
    # call meets it dead in the middle of its work.
    with pytest.raises(ServiceUnavailable):
        assemble(_request(project_id), lambda: Q, db=app_db, config=DEFAULT_CONFIG)
    for table in ("context_calls", "context_traces"):
        count = owner_conn.execute(
            f"SELECT count(*) FROM {table} WHERE project_id = %s", (project_id,)).fetchone()
        assert count == (1,), table  # the first call's only
    served = assemble(_request(project_id), lambda: Q, db=app_db, config=DEFAULT_CONFIG)
    assert (served.facts_served, served.episodes_served) == (1, 1)
    assert app_db.sibling().connection().info.backend_pid != side.info.backend_pid


def test_a_statement_past_the_timeout_is_cancelled_and_the_handle_stays_usable(
    db_urls: dict[Role, str], project_id: str, tenant_key: str
) -> None:
    db = Database(db_urls[Role.APP], statement_timeout_ms=200)
    try:
        with pytest.raises(ServiceUnavailable, match="in time") as refused, \
                db.transaction(project_id) as conn:
            conn.execute("SELECT pg_sleep(30)")  # without the bound: no error at all
        assert (refused.value.code, refused.value.status) == ("service_unavailable", 503)
        with db.transaction(project_id) as conn:
            assert conn.execute("SHOW statement_timeout").fetchone() == ("200ms",)
            assert conn.execute("SELECT 1").fetchone() == (1,)
        # Transaction-local: a connection used without the bound does not keep it.
        with db.connection().transaction():
            assert db.connection().execute("SHOW statement_timeout").fetchone() == ("0",)
    finally:
        db.close()


def test_database_stopped_mid_run_is_503_then_the_next_call_after_restart_succeeds(
    server_data_dir: Callable[[str], Path]
) -> None:
    data_dir = server_data_dir("test-fault-pg-")
    superuser = start_embedded(data_dir)
    ensure_database(superuser, "haki")
    urls = {role: embedded_role_url(superuser, role, "haki") for role in Role}
    apply_migrations(urls[Role.OWNER])
    db = Database(urls[Role.APP])
    request = _request("p-fault")
    try:
        with acting_as_tenant(urls[Role.OWNER], "p-fault"):
            assemble(request, lambda: Q, db=db, config=DEFAULT_CONFIG)
            stop_embedded(data_dir)
            with pytest.raises(ServiceUnavailable):
                assemble(request, lambda: Q, db=db, config=DEFAULT_CONFIG)
            start_embedded(data_dir)
            served = assemble(request, lambda: Q, db=db, config=DEFAULT_CONFIG)
        assert served.response.packet.empty_reason == "no_memory"
    finally:
        db.close()


@pytest.mark.parametrize("damage", ["truncated", "missing"])
def test_a_broken_model_file_is_a_clear_error_at_first_use(tmp_path: Path, damage: str) -> None:
    provider = Settings().embed_provider
    source = get_settings().model_dir / provider
    copy = tmp_path / provider
    shutil.copytree(source, copy)
    model = copy / "model.onnx"
    if damage == "truncated":
        model.write_bytes(model.read_bytes()[:1000])
    else:
        model.unlink()
    with pytest.raises(ConfigurationError, match=r"model\.onnx"):
        # A missing file is found when the embedder is made, a damaged one when it loads.
        get_embedder(Settings(model_dir=tmp_path)).embed_query("hello")
    assert np.asarray(get_embedder(get_settings()).embed_query("hello")).shape == (384,)
