"""Stats: the overview equals the same figures computed from the raw calls, before
aggregation, after it and after re-running it; the watermark never strands a call.

The aggregation and its watermark are database-wide, so this module works on a database of
its own."""

import bisect
import json
import math
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import numpy as np
import psycopg
import pytest

from haki import stats
from haki.db import Database, Role
from haki.stats import histogram as buckets
from tests.conftest import acting_as_tenant


@pytest.fixture
def now() -> datetime:
    """This test's "now" (read when it starts, not when the module was collected)."""
    return datetime.now(UTC)


@pytest.fixture(scope="module")
def urls(migrated_database: Callable[[], dict[Role, str]]) -> dict[Role, str]:
    return migrated_database()


@pytest.fixture
def app(urls: dict[Role, str], open_database: Callable[[str], Database]) -> Database:
    return open_database(urls[Role.APP])


@pytest.fixture
def stats_db(urls: dict[Role, str], open_database: Callable[[str], Database]) -> Database:
    return open_database(urls[Role.STATS])


def _call(conn: psycopg.Connection, project: str, subject: str, *, at: datetime,
          latency: float, facts: int, tokens: int) -> None:
    conn.execute(
        "INSERT INTO context_calls (trace_id, project_id, subject_id, query, budget_tokens, "
        "packet, token_count, status, facts_served, episodes_served, candidates, embed_ms, "
        "retrieval_ms, latency_ms, created_at) "
        "VALUES (%s, %s, %s, 'q', 900, '{}', %s, 'ok', %s, 0, 5, 1, 1, %s, %s)",
        (uuid.uuid4(), project, subject, tokens, facts, latency, at))


def _seed(conn: psycopg.Connection, project: str, seed: int, now: datetime,
          hours: int = 30) -> None:
    rng = np.random.default_rng(seed)
    for subject in ("alice", "bob"):
        for _ in range(60):
            _call(conn, project, subject,
                  at=now - timedelta(minutes=float(rng.uniform(0, hours * 60))),
                  latency=float(rng.lognormal(3, 0.9)), facts=int(rng.integers(0, 3)),
                  tokens=int(rng.integers(0, 900)))


def _raw(conn: psycopg.Connection, project: str, subject: str | None) -> dict[str, object]:
    """The reference figures, straight from the raw calls (as the owner)."""
    rows = conn.execute(
        "SELECT latency_ms, facts_served, token_count FROM context_calls "
        "WHERE project_id = %s AND (%s::text IS NULL OR subject_id = %s)",
        (project, subject, subject)).fetchall()

    def percentile(percent: int) -> float | None:
        if not rows:
            return None
        ordered = sorted(r[0] for r in rows)
        value = ordered[math.ceil(len(ordered) * percent / 100) - 1]
        bucket = min(bisect.bisect_right(buckets.LATENCY_BOUNDS_MS, value),
                     len(buckets.LATENCY_BOUNDS_MS) - 1)
        return float(buckets.LATENCY_BOUNDS_MS[bucket])

    rate = sum(r[1] > 0 for r in rows) / len(rows) if rows else None
    return {"recall_count": len(rows), "context_tokens_served": sum(r[2] for r in rows),
            "injection_rate": rate, "hit_rate": rate,
            "recall_p50_ms": percentile(50), "recall_p99_ms": percentile(99)}


def _overview(urls: dict[Role, str], app: Database, *, project_id: str,
              subject_id: str | None = None) -> stats.StatsOverview:
    """The overview as the runtime role acting for a key of ``project_id``."""
    with acting_as_tenant(urls[Role.OWNER], project_id):
        return stats.overview(app, project_id=project_id, subject_id=subject_id)


def _figures(overview: stats.StatsOverview) -> dict[str, object]:
    return {k: getattr(overview, k) for k in (
        "recall_count", "context_tokens_served", "injection_rate", "hit_rate",
        "recall_p50_ms", "recall_p99_ms")}


def _rollups(conn: psycopg.Connection) -> list[tuple]:
    return conn.execute(
        "SELECT project_id, subject_id, bucket_start, calls, calls_with_facts, tokens_served, "
        "latency_hist FROM stats_rollups ORDER BY 1, 2, 3").fetchall()


def test_overview_matches_raw_calls_before_after_and_after_rerun(
    owner: psycopg.Connection, app: Database, stats_db: Database, now: datetime
, urls: dict[Role, str]) -> None:
    project = f"p-{uuid.uuid4().hex[:8]}"
    _seed(owner, project, seed=1, now=now)
    _seed(owner, project + "-other", seed=2, now=now)
    for subject in (None, "alice", "bob"):
        assert _figures(_overview(urls, app, project_id=project, subject_id=subject)) == _raw(
            owner, project, subject)

    result = stats.aggregate(stats_db)
    assert result.calls > 0 and result.rollup_rows > 0
    rolled = _rollups(owner)
    assert sum(r[3] for r in rolled) == result.calls
    for subject in (None, "alice", "bob"):
        assert _figures(_overview(urls, app, project_id=project, subject_id=subject)) == _raw(
            owner, project, subject)

    again = stats.aggregate(stats_db, rerun_from=now - timedelta(days=3))
    assert _rollups(owner) == rolled
    assert again.rolled_until == result.rolled_until
    assert _figures(_overview(urls, app, project_id=project)) == _raw(owner, project, None)


def test_watermark_is_hour_aligned_and_leaves_the_grace_period_in_the_tail(
    owner: psycopg.Connection, app: Database, stats_db: Database, now: datetime
, urls: dict[Role, str]) -> None:
    project = f"p-{uuid.uuid4().hex[:8]}"
    # A call whose transaction started 5 minutes ago may still be committing: it must stay
    # in the tail, not fall behind the watermark.
    _call(owner, project, "s", at=now - timedelta(minutes=5), latency=12.0, facts=1, tokens=9)
    result = stats.aggregate(stats_db)
    # The cutoff is read from the clock during the aggregation: after it, at the latest.
    assert result.rolled_until <= datetime.now(UTC) - stats.GRACE
    assert result.rolled_until.minute == 0 and result.rolled_until.second == 0
    assert now - result.rolled_until < stats.GRACE + timedelta(hours=1)
    rolled = owner.execute(
        "SELECT count(*) FROM stats_rollups WHERE project_id = %s", (project,)).fetchone()
    assert rolled == (0,)
    overview = _overview(urls, app, project_id=project)
    assert overview.recall_count == 1 and overview.recall_p50_ms == 14.0


def test_rollups_of_an_hour_equal_the_raw_calls_of_that_hour(
    owner: psycopg.Connection, stats_db: Database, now: datetime
) -> None:
    project = f"p-{uuid.uuid4().hex[:8]}"
    hour = (now - timedelta(hours=5)).replace(minute=0, second=0, microsecond=0)
    latencies = [0.5, 1.0, 9.99, 10.0, 250.0, 45_000.0]
    for i, latency in enumerate(latencies):
        _call(owner, project, "s", at=hour + timedelta(minutes=i * 9), latency=latency,
              facts=i % 2, tokens=10 * i)
    stats.aggregate(stats_db, rerun_from=hour)
    row = owner.execute(
        "SELECT bucket_start, calls, calls_with_facts, tokens_served, latency_hist "
        "FROM stats_rollups WHERE project_id = %s", (project,)).fetchall()
    assert len(row) == 1
    bucket_start, calls, with_facts, tokens, hist = row[0]
    assert bucket_start == hour and calls == 6 and with_facts == 3 and tokens == 150
    expected = [0] * buckets.HISTOGRAM_SIZE
    for latency in latencies:
        expected[bisect.bisect_right(buckets.LATENCY_BOUNDS_MS, latency)] += 1
    assert hist == expected


def test_overview_counts_memory_and_scope(
    owner: psycopg.Connection, app: Database, now: datetime
, urls: dict[Role, str]) -> None:
    project = f"p-{uuid.uuid4().hex[:8]}"
    vec = np.ones(384, dtype=np.float32) / np.sqrt(384)
    ids = []
    expired = now - timedelta(days=1)
    for subject, status, valid_to in (("a", "active", None), ("a", "active", expired),
                                      ("a", "superseded", None), ("b", "active", None)):
        fact_id = uuid.uuid4()
        ids.append(fact_id)
        owner.execute(
            "INSERT INTO facts (id, project_id, subject_id, predicate, value, status, valid_to, "
            "valid_from, embedding) VALUES (%s, %s, %s, 'p', %s, %s, %s, %s, %s)",
            (fact_id, project, subject, json.dumps("v"), status, valid_to,
             now - timedelta(days=30), vec))
    owner.execute(
        "INSERT INTO conflict_sets (project_id, subject_id, fact_ids) VALUES (%s, 'a', %s)",
        (project, ids[:2]))
    for days_ago in (0, 0, 3, 6, 7, 40):
        owner.execute(
            "INSERT INTO events (project_id, subject_id, kind, occurred_at, embedding) "
            "VALUES (%s, 'a', 'k', %s, %s)", (project, now - timedelta(days=days_ago), vec))
    everything = _overview(urls, app, project_id=project)
    assert everything.active_facts == 2 and everything.open_conflicts == 1
    week = everything.events_this_week
    assert len(week) == 7 and week[-1].date == now.date()
    assert [d.count for d in week] == [1, 0, 0, 1, 0, 0, 2]
    assert everything.recall_count == 0 and everything.recall_p50_ms is None
    only_b = _overview(urls, app, project_id=project, subject_id="b")
    assert only_b.active_facts == 1 and only_b.open_conflicts == 0
    assert sum(d.count for d in only_b.events_this_week) == 0
    assert _overview(urls, app, project_id=project + "-nobody").active_facts == 0


def test_sql_buckets_are_half_open_and_match_the_reference(pg_superuser_url: str) -> None:
    """``width_bucket`` (what the rollup and the overview run) puts a latency in the bucket
    the percentiles assume: [bound_i-1, bound_i), overflow in the last one."""
    samples = [0.0, 0.999, 1.0, 9.99, 10.0, 29_999.9, 30_000.0, 1e9]
    with psycopg.connect(pg_superuser_url) as conn:
        rows = conn.execute(
            "SELECT width_bucket(x, %s::float8[]) FROM unnest(%s::float8[]) AS x",
            (list(buckets.LATENCY_BOUNDS_MS), samples)).fetchall()
    reference = [bisect.bisect_right(buckets.LATENCY_BOUNDS_MS, x) for x in samples]
    assert [r[0] for r in rows] == reference
    assert [r[0] for r in rows][:3] == [0, 0, 1]
    assert rows[-1][0] == buckets.HISTOGRAM_SIZE - 1


def _raw_series(conn: psycopg.Connection, project: str, subject: str | None,
                since: datetime) -> list[tuple]:
    """The reference series, per UTC hour, straight from the raw calls (as the owner)."""
    rows = conn.execute(
        "SELECT date_trunc('hour', created_at AT TIME ZONE 'UTC'), latency_ms, facts_served, "
        "token_count FROM context_calls WHERE project_id = %s "
        "AND (%s::text IS NULL OR subject_id = %s) AND created_at >= %s",
        (project, subject, subject, since)).fetchall()
    hours: dict[datetime, list[tuple]] = {}
    for hour, *rest in rows:
        hours.setdefault(hour.replace(tzinfo=UTC), []).append(tuple(rest))

    def percentile(latencies: list[float], percent: int) -> float:
        value = sorted(latencies)[math.ceil(len(latencies) * percent / 100) - 1]
        return float(buckets.LATENCY_BOUNDS_MS[min(
            bisect.bisect_right(buckets.LATENCY_BOUNDS_MS, value),
            len(buckets.LATENCY_BOUNDS_MS) - 1)])

    return [(hour, len(calls), sum(c[1] > 0 for c in calls), sum(c[2] for c in calls),
             percentile([c[0] for c in calls], 50), percentile([c[0] for c in calls], 95))
            for hour, calls in sorted(hours.items())]


def test_series_matches_raw_calls_hour_by_hour_from_rollups_and_tail(
    owner: psycopg.Connection, app: Database, stats_db: Database, now: datetime,
    urls: dict[Role, str]
) -> None:
    project = f"p-{uuid.uuid4().hex[:8]}"
    _seed(owner, project, seed=3, now=now)
    _seed(owner, project + "-other", seed=4, now=now)
    _call(owner, project, "alice", at=now, latency=42.0, facts=1, tokens=100)  # in the tail

    def series(subject: str | None) -> tuple[datetime, list[tuple]]:
        with acting_as_tenant(urls[Role.OWNER], project):
            answer = stats.series(app, project_id=project, subject_id=subject, days=2,
                                  granularity="hour")
        return answer.since, [(p.start, p.calls, p.calls_with_facts, p.tokens_served,
                               p.latency_p50_ms, p.latency_p95_ms) for p in answer.points]

    # The calls are dated back behind the watermark another test may have moved: roll their
    # hours up again, so that the older hours come from the rollups and the last from the tail.
    rolled = stats.aggregate(stats_db, rerun_from=now - timedelta(days=3))
    assert rolled.calls > 0 and rolled.rolled_until > now - timedelta(hours=2)
    first = {subject: series(subject) for subject in (None, "alice")}
    for subject, (since, points) in first.items():
        assert points == _raw_series(owner, project, subject, since)
        assert sum(p[1] for p in points) == (121 if subject is None else 61)
        assert any(p[0] >= rolled.rolled_until for p in points)  # some hours from the tail
    stats.aggregate(stats_db)
    for subject, (since, points) in first.items():
        assert series(subject) == (since, points)
