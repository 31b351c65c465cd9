"""The overview of one project (optionally one subject): rollups + the not-yet-rolled tail,
read in one statement as the runtime role."""

from dataclasses import dataclass

from haki.db import Database
from haki.stats.histogram import HISTOGRAM_SIZE, LATENCY_BOUNDS_MS, histogram_percentile
from haki.stats.models import DayCount, StatsOverview

#: Days of ``events_this_week``, today (UTC) included.
WEEK_DAYS = 7


@dataclass(frozen=True)
class CallTotals:
    """Figures over a set of calls; the overview derives rates and percentiles from them."""

    calls: int
    calls_with_facts: int
    tokens_served: int
    latency_hist: list[int]


# One statement, hence one snapshot: the watermark, the rollups below it and the raw tail
# above it are read together. Rollups by primary key (project_id, subject_id, bucket_start),
# tail by context_calls_scope_idx, facts by facts_scope_idx, events by events_scope_idx,
# conflicts by conflict_sets_open_idx (migrations/0001_schema.sql).
_OVERVIEW_SQL = """
WITH wm AS (
    SELECT coalesce(max(rolled_until), '-infinity'::timestamptz) AS rolled_until
    FROM stats_watermark
),
rolled AS (
    SELECT r.calls, r.calls_with_facts, r.tokens_served, r.latency_hist
    FROM stats_rollups AS r, wm
    WHERE r.project_id = %(project_id)s
      AND (%(subject_id)s::text IS NULL OR r.subject_id = %(subject_id)s)
      AND r.bucket_start < wm.rolled_until
),
tail AS (
    SELECT c.facts_served, c.token_count,
           width_bucket(c.latency_ms::float8, %(bounds)s::float8[]) AS bucket
    FROM context_calls AS c, wm
    WHERE c.project_id = %(project_id)s
      AND (%(subject_id)s::text IS NULL OR c.subject_id = %(subject_id)s)
      AND c.created_at >= wm.rolled_until
),
latency AS (
    SELECT u.i::int - 1 AS bucket, u.n::bigint AS n
    FROM rolled, unnest(rolled.latency_hist) WITH ORDINALITY AS u(n, i)
    UNION ALL
    SELECT bucket, 1 FROM tail
),
merged AS (
    SELECT bucket, sum(n)::bigint AS n FROM latency GROUP BY bucket
),
days AS (
    SELECT d::date AS day
    FROM generate_series((now() AT TIME ZONE 'UTC')::date - (%(days)s::int - 1),
                         (now() AT TIME ZONE 'UTC')::date, interval '1 day') AS d
),
day_counts AS (
    SELECT (e.occurred_at AT TIME ZONE 'UTC')::date AS day, count(*) AS n
    FROM events AS e
    WHERE e.project_id = %(project_id)s
      AND (%(subject_id)s::text IS NULL OR e.subject_id = %(subject_id)s)
      AND e.occurred_at >= ((SELECT min(day) FROM days)::timestamp AT TIME ZONE 'UTC')
      AND e.occurred_at < (((SELECT max(day) FROM days) + 1)::timestamp AT TIME ZONE 'UTC')
    GROUP BY 1
)
SELECT
    (SELECT coalesce(sum(calls), 0) FROM rolled) + (SELECT count(*) FROM tail),
    (SELECT coalesce(sum(calls_with_facts), 0) FROM rolled)
        + (SELECT count(*) FROM tail WHERE facts_served > 0),
    (SELECT coalesce(sum(tokens_served), 0) FROM rolled)
        + (SELECT coalesce(sum(token_count), 0) FROM tail),
    (SELECT coalesce(array_agg(bucket ORDER BY bucket), '{}') FROM merged),
    (SELECT coalesce(array_agg(n ORDER BY bucket), '{}') FROM merged),
    (SELECT count(*) FROM facts AS f
     WHERE f.project_id = %(project_id)s
       AND (%(subject_id)s::text IS NULL OR f.subject_id = %(subject_id)s)
       AND f.status = 'active' AND (f.valid_to IS NULL OR f.valid_to > now())),
    (SELECT count(*) FROM conflict_sets AS s
     WHERE s.project_id = %(project_id)s
       AND (%(subject_id)s::text IS NULL OR s.subject_id = %(subject_id)s)
       AND s.status = 'open'),
    (SELECT array_agg(d.day ORDER BY d.day) FROM days AS d),
    (SELECT array_agg(coalesce(c.n, 0) ORDER BY d.day)
     FROM days AS d LEFT JOIN day_counts AS c ON c.day = d.day)
"""


def overview(db: Database, *, project_id: str, subject_id: str | None = None) -> StatsOverview:
    """The overview of one project (optionally one subject), read as the runtime role in a
    transaction scoped to ``project_id``."""
    params = {
        "project_id": project_id,
        "subject_id": subject_id,
        "bounds": list(LATENCY_BOUNDS_MS),
        "days": WEEK_DAYS,
    }
    with db.transaction(project_id) as conn:
        row = conn.execute(_OVERVIEW_SQL, params).fetchone()
    assert row is not None  # a SELECT without FROM returns one row
    calls, with_facts, tokens, buckets, counts, active, conflicts, days, day_counts = row
    latency_hist = [0] * HISTOGRAM_SIZE
    for bucket, n in zip(buckets, counts, strict=True):
        latency_hist[bucket] = int(n)
    totals = CallTotals(int(calls), int(with_facts), int(tokens), latency_hist)
    return build_overview(
        totals,
        project_id=project_id,
        subject_id=subject_id,
        active_facts=int(active),
        open_conflicts=int(conflicts),
        events_this_week=[
            DayCount(date=d, count=int(n)) for d, n in zip(days, day_counts, strict=True)
        ],
    )


def build_overview(
    totals: CallTotals,
    *,
    project_id: str,
    subject_id: str | None,
    active_facts: int,
    open_conflicts: int,
    events_this_week: list[DayCount],
) -> StatsOverview:
    """Derive rates and percentiles from call totals (the same code for rollups and raw)."""
    rate = totals.calls_with_facts / totals.calls if totals.calls else None
    return StatsOverview(
        project_id=project_id,
        subject_id=subject_id,
        active_facts=active_facts,
        open_conflicts=open_conflicts,
        events_this_week=events_this_week,
        recall_count=totals.calls,
        recall_p50_ms=histogram_percentile(totals.latency_hist, 50),
        recall_p99_ms=histogram_percentile(totals.latency_hist, 99),
        injection_rate=rate,
        hit_rate=rate,
        context_tokens_served=totals.tokens_served,
    )
