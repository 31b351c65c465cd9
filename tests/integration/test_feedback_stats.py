"""The calls' feedback in the stats: the rollups and ``GET /v1/stats/series`` carry the share of
served items used, the calls with a missing report and the tokens per used item; feedback given
once its call's hour is rolled up is folded by the next aggregation; the tail is live. A
database of its own: the aggregation rolls every project up."""

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

import psycopg
import pytest

from haki import stats
from haki.assembler.trace import new_trace_id
from haki.db import Database, Role
from haki.db.connection import connect
from tests.conftest import acting_as_tenant

NOW = datetime.now(UTC)
OLD = NOW.replace(minute=0, second=0, microsecond=0) - timedelta(hours=3) + timedelta(minutes=5)


def _call(owner: psycopg.Connection, at: datetime, served: int, tokens: int) -> UUID:
    trace_id = new_trace_id(at)
    owner.execute(
        "INSERT INTO context_calls (trace_id, project_id, subject_id, query, budget_tokens, "
        "packet, token_count, status, facts_served, episodes_served, candidates, embed_ms, "
        "retrieval_ms, latency_ms, created_at) VALUES (%s, 'p', 's', 'q', 900, '{}', %s, 'ok', "
        "%s, 1, 5, 1, 1, 12, %s)", (trace_id, tokens, served - 1, at))
    return trace_id


def _feedback(owner: psycopg.Connection, trace_id: UUID, at: datetime, used: int, missing: int,
              source: str = "agent") -> None:
    owner.execute(
        "INSERT INTO call_feedback (project_id, trace_id, call_created_at, source, subject_id, "
        "used, missing) VALUES ('p', %s, %s, %s, 's', %s, %s) ON CONFLICT (project_id, "
        "trace_id, call_created_at, source) DO UPDATE SET used = excluded.used, "
        "missing = excluded.missing, updated_at = now()",
        (trace_id, at, source, [uuid4() for _ in range(used)],
         [uuid4() for _ in range(missing)]))


@pytest.fixture
def urls(migrated_database: Callable[[], dict[Role, str]]) -> dict[Role, str]:
    return migrated_database()


def test_feedback_is_rolled_up_refolded_when_late_and_live_in_the_tail(
        urls: dict[Role, str]) -> None:
    app, stats_db = Database(urls[Role.APP]), Database(urls[Role.STATS])
    try:
        with connect(urls[Role.OWNER]) as owner, acting_as_tenant(urls[Role.OWNER], "p"):
            first = _call(owner, OLD, served=3, tokens=90)
            second = _call(owner, OLD + timedelta(minutes=1), served=4, tokens=100)
            _call(owner, OLD + timedelta(minutes=2), served=2, tokens=50)  # no feedback
            _feedback(owner, first, OLD, used=2, missing=1)
            # Two sources on one call: its items count once (here: distinct ids, so 2 + 1).
            _feedback(owner, first, OLD, used=1, missing=0, source="person")

            def old_point() -> stats.SeriesPoint:
                points = stats.series(app, project_id="p", days=1, granularity="hour").points
                return next(p for p in points if p.start == OLD.replace(minute=0))

            live = old_point()  # not rolled up yet: read from the calls
            stats.aggregate(stats_db, grace=timedelta(0))
            rolled = old_point()
            assert live == rolled
            assert (rolled.calls, rolled.calls_with_feedback, rolled.items_used,
                    rolled.calls_with_missing) == (3, 1, 3, 1)
            assert rolled.used_share == pytest.approx(3 / 3)
            assert rolled.tokens_per_used_item == pytest.approx(90 / 3)

            # Feedback on a call whose hour is rolled up: the next run folds it.
            _feedback(owner, second, OLD + timedelta(minutes=1), used=1, missing=2)
            assert old_point().calls_with_feedback == 1
            stats.aggregate(stats_db, grace=timedelta(0))
            refolded = old_point()
            assert (refolded.calls, refolded.calls_with_feedback, refolded.items_used,
                    refolded.calls_with_missing) == (3, 2, 4, 2)
            assert refolded.used_share == pytest.approx(4 / 7)
            assert refolded.tokens_per_used_item == pytest.approx(190 / 4)
            # A rerun of the window writes the same rows.
            before = owner.execute("SELECT * FROM stats_rollups ORDER BY bucket_start").fetchall()
            stats.aggregate(stats_db, grace=timedelta(0), rerun_from=OLD - timedelta(hours=1))
            assert owner.execute(
                "SELECT * FROM stats_rollups ORDER BY bucket_start").fetchall() == before

            # The tail is live.
            recent = _call(owner, NOW, served=2, tokens=40)
            _feedback(owner, recent, NOW, used=0, missing=1)
            points = stats.series(app, project_id="p", days=1, granularity="day").points
            today = points[-1]
            assert today.calls_with_feedback == (3 if OLD.date() == NOW.date() else 1)
            assert today.calls_with_missing == (3 if OLD.date() == NOW.date() else 1)
    finally:
        app.close()
        stats_db.close()
