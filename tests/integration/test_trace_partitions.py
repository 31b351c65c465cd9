"""Day partitions of context_calls / context_traces and trace retention (migration
0014): inserts across a day boundary, the DEFAULT partition, retention dropping only old whole
partitions (rollups and the overview unchanged, inspect of an expired trace a 404, forget still
working), two runs at once, and row-level security on a partition made after the migration.
Each test has a database of its own: retention drops partitions."""

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from uuid import UUID

import psycopg
import pytest
from psycopg.types.json import Jsonb

from haki import stats
from haki.assembler.trace import load_trace, new_trace_id
from haki.db import Database, Role
from haki.db.connection import acting_for, connect
from haki.db.migrate import apply_migrations
from haki.errors import TraceNotFound
from haki.memory.api import ForgetRequest
from haki.memory.forget import forget
from tests.conftest import acting_as_tenant, concurrently

TODAY = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0)

INSERT_CALL = """
WITH call AS (
    INSERT INTO context_calls (trace_id, project_id, subject_id, query, budget_tokens, packet,
        token_count, status, facts_served, episodes_served, candidates, embed_ms, retrieval_ms,
        latency_ms, created_at)
    VALUES (%(id)s, %(project)s, %(subject)s, 'q', 100, %(packet)s, 7,
            'ok', 1, 0, 2, 1, 2, 3, %(at)s)
    RETURNING trace_id, project_id, created_at
)
INSERT INTO context_traces
SELECT trace_id, created_at, project_id, '{0,1}', ARRAY[%(fact)s::uuid, NULL],
       ARRAY[NULL, gen_random_uuid()], '{1,2}', '{1,4}', '{1,NULL}', '{0.9,0.1}',
       '{0.8,NULL}', '{NULL,NULL}', '{5,9}', '{f,f}', '{1,NULL}', '{NULL,NULL}',
       '{NULL,NULL}'
FROM call
"""

FACT = UUID("00000000-0000-4000-8000-000000000001")
PACKET = Jsonb({"facts": [], "episodes": [], "warnings": [], "status": "ok",
                "empty_reason": None})


@pytest.fixture
def urls(migrated_database: Callable[[], dict[Role, str]]) -> dict[Role, str]:
    return migrated_database()


def _call(owner: psycopg.Connection, project: str, at: datetime, subject: str = "s") -> UUID:
    trace_id = new_trace_id(at)
    owner.execute(INSERT_CALL, {"id": trace_id, "project": project, "subject": subject,
                                "at": at, "fact": FACT, "packet": PACKET})
    return trace_id


def _partition_of(owner: psycopg.Connection, table: str, trace_id: UUID) -> str:
    row = owner.execute(f"SELECT tableoid::regclass::text FROM {table} WHERE trace_id = %s",
                        (trace_id,)).fetchone()
    assert row is not None
    return str(row[0])


def _days_back(owner: psycopg.Connection, days: int) -> None:
    """Partitions from ``days`` ago to a week ahead (as a migrated database of that age)."""
    owner.execute("SELECT haki_trace_partitions(7, 36500, %s)",
                  ((TODAY - timedelta(days=days)).date(),))


def test_inserts_across_a_day_boundary_land_in_their_day(owner: psycopg.Connection) -> None:
    midnight = (TODAY + timedelta(days=1)).replace(hour=0)
    before = _call(owner, "p1", midnight - timedelta(microseconds=1))
    after = _call(owner, "p1", midnight)
    day, next_day = (midnight - timedelta(days=1)).strftime("%Y%m%d"), midnight.strftime("%Y%m%d")
    for table in ("context_calls", "context_traces"):
        assert _partition_of(owner, table, before) == f"{table}_p{day}"
        assert _partition_of(owner, table, after) == f"{table}_p{next_day}"


def test_the_default_partition_catches_a_day_without_partition(
    urls: dict[Role, str], owner: psycopg.Connection
) -> None:
    far = TODAY + timedelta(days=400)
    trace_id = _call(owner, "p1", far)
    for table in ("context_calls", "context_traces"):
        assert _partition_of(owner, table, trace_id) == f"{table}_default"
    result = stats.maintain_partitions(Database(urls[Role.STATS]), retention_days=30)
    assert result.default_rows == 2
    # Once its day gets a partition, the rows move out of DEFAULT into it.
    owner.execute("SELECT haki_trace_partitions(0, 36500, %s)", (far.date(),))
    assert _partition_of(owner, "context_calls", trace_id) == (
        f"context_calls_p{far.strftime('%Y%m%d')}")
    assert owner.execute("SELECT count(*) FROM context_calls_default").fetchone() == (0,)


def _partitions(owner: psycopg.Connection) -> set[str]:
    return {r[0] for r in owner.execute(
        "SELECT c.relname FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid "
        "WHERE i.inhparent IN ('context_calls'::regclass, 'context_traces'::regclass, "
        "'call_feedback'::regclass)")}


def test_retention_drops_only_whole_old_partitions_and_keeps_the_rollups(
    urls: dict[Role, str], owner: psycopg.Connection
) -> None:
    _days_back(owner, 45)
    ages = {40: None, 31: None, 29: None, 0: None}
    for days in ages:
        ages[days] = _call(owner, "p1", TODAY - timedelta(days=days) - timedelta(hours=3))
    stats_db = Database(urls[Role.STATS])
    stats.aggregate(stats_db)
    rollups = owner.execute(
        "SELECT * FROM stats_rollups ORDER BY project_id, subject_id, bucket_start").fetchall()
    app_db = Database(urls[Role.APP])
    with acting_as_tenant(urls[Role.OWNER], "p1") as key:
        overview_before = stats.overview(app_db, project_id="p1")
        # Every trace can be inspected before retention.
        for trace_id in ages.values():
            load_trace(app_db, project_id="p1", subject_id="s", trace_id=trace_id)
        partitions_before = _partitions(owner)

        # Two runs at once: one waits on the other's advisory lock, then has nothing to do.
        results = concurrently(lambda: stats.maintain_partitions(
            Database(urls[Role.STATS]), retention_days=30), 2)

        dropped = partitions_before - _partitions(owner)
        cutoff = (TODAY - timedelta(days=30)).date()
        expected = {f"{t}_p{(TODAY - timedelta(days=d)).strftime('%Y%m%d')}"
                    for t in ("context_calls", "context_traces", "call_feedback")
                    for d in range(31, 46)
                    if (TODAY - timedelta(days=d)).date() < cutoff}
        assert dropped == expected
        assert sorted(r.partitions_dropped for r in results) == [0, len(expected)]
        assert stats.maintain_partitions(stats_db, retention_days=30).partitions_dropped == 0

        assert owner.execute(
            "SELECT * FROM stats_rollups ORDER BY project_id, subject_id, bucket_start"
        ).fetchall() == rollups
        assert stats.overview(app_db, project_id="p1") == overview_before
        for days in (40, 31):
            with pytest.raises(TraceNotFound):
                load_trace(app_db, project_id="p1", subject_id="s", trace_id=ages[days])
        for days in (29, 0):
            inspected = load_trace(app_db, project_id="p1", subject_id="s", trace_id=ages[days])
            assert [d.action for d in inspected.decisions] == ["included", "excluded"]
            assert [d.reason_code for d in inspected.decisions] == [
                "top_score", "over_budget"]

        with acting_for(key):
            receipt = forget(app_db, "p1", ForgetRequest(project_id="p1", subject_id="s",
                                                         mode="delete"))
        assert receipt.counts["context_calls"] == 2
        assert receipt.counts["context_traces"] == 4
    app_db.close()
    stats_db.close()


def test_row_level_security_holds_on_a_partition_made_after_the_migration(
    urls: dict[Role, str], owner: psycopg.Connection
) -> None:
    day = TODAY + timedelta(days=20)
    owner.execute("SELECT haki_trace_partitions(0, 36500, %s)", (day.date(),))
    mine, theirs = _call(owner, "p1", day), _call(owner, "p2", day)
    assert _partition_of(owner, "context_traces", mine) == (
        f"context_traces_p{day.strftime('%Y%m%d')}")
    app_db = Database(urls[Role.APP])
    with acting_as_tenant(urls[Role.OWNER], "p1"), app_db.transaction("p1") as conn:
        for table in ("context_calls", "context_traces"):
            seen = {r[0] for r in conn.execute(f"SELECT trace_id FROM {table}")}
            assert mine in seen and theirs not in seen, table
        assert conn.execute("SELECT count(*) FROM context_trace_decisions "
                            "WHERE trace_id = %s", (theirs,)).fetchone() == (0,)
    # The partitions themselves grant the runtime role nothing.
    with connect(urls[Role.APP]) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute(f"SELECT * FROM context_traces_p{day.strftime('%Y%m%d')}")
    app_db.close()


def test_trace_codes_match_the_models() -> None:
    from typing import get_args

    from haki.models import TraceAction

    assert list(get_args(TraceAction)) == ["included", "excluded", "blocked"]


def test_inspect_by_id_reads_only_the_partitions_of_the_ids_day(
    owner: psycopg.Connection,
) -> None:
    from haki.assembler.trace import SELECT_CALL, SELECT_DECISIONS, trace_time_bounds

    _days_back(owner, 30)
    trace_id = _call(owner, "p1", TODAY - timedelta(days=3))
    lo, hi = trace_time_bounds(trace_id)
    params = {"trace_id": trace_id, "project_id": "p1", "subject_id": "s", "from": lo,
              "until": hi}
    for statement, table in ((SELECT_CALL, "context_calls"),
                             (SELECT_DECISIONS, "context_traces")):
        plan = "\n".join(r[0] for r in owner.execute(f"EXPLAIN {statement}", params))
        # Partition names only (their indexes' names start the same way).
        scanned = {word for word in plan.split()
                   if re.fullmatch(rf"{table}_(p\d{{8}}|default)", word)}
        # The id's day (+- 1 hour around noon: one day) of 39 partitions; DEFAULT is pruned
        # too (its constraint excludes every range a day partition covers).
        day = (TODAY - timedelta(days=3)).strftime("%Y%m%d")
        assert scanned == {f"{table}_p{day}"}, plan


def test_inspect_falls_back_to_the_writer_for_a_trace_the_reader_lacks(
    urls: dict[Role, str], owner: psycopg.Connection,
    fresh_database: Callable[[], dict[Role, str]],
) -> None:
    """A lagging replica: a second database holding the same key but not the trace."""
    replica = fresh_database()
    apply_migrations(replica[Role.OWNER])
    writer_db, reader_db = Database(urls[Role.APP]), Database(replica[Role.APP])
    with acting_as_tenant(urls[Role.OWNER], "p1"), connect(replica[Role.OWNER]) as copy:
        for table in ("projects", "api_keys"):
            columns = [r[0] for r in owner.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = %s "
                "AND is_generated = 'NEVER' ORDER BY ordinal_position", (table,))]
            rows = owner.execute(f"SELECT {', '.join(columns)} FROM {table}").fetchall()
            marks = ", ".join(["%s"] * len(columns))
            with copy.cursor() as cur:
                cur.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})",
                                rows)
        copy.commit()
        trace_id = _call(owner, "p1", datetime.now(UTC))
        with pytest.raises(TraceNotFound):
            load_trace(reader_db, project_id="p1", subject_id="s", trace_id=trace_id)
        found = load_trace(writer_db, project_id="p1", subject_id="s", trace_id=trace_id,
                           reader=reader_db)
        assert found.trace_id == trace_id
        with pytest.raises(TraceNotFound):
            load_trace(writer_db, project_id="p1", subject_id="s", trace_id=new_trace_id(),
                       reader=reader_db)
    writer_db.close()
    reader_db.close()
