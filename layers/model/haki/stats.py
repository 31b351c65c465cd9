"""Usage statistics: the overview of one project (SPEC §5) and the rollup aggregation (§7).

Design
------
* **Rollups.** The scheduled aggregation (role ``haki_stats``) folds ``context_calls`` into
  one ``stats_rollups`` row per (project, subject, UTC hour): call count, calls that served at
  least one fact, tokens served, and a latency histogram over the fixed bounds
  :data:`LATENCY_BOUNDS_MS`. Histograms of any rows merge by element-wise sum.
* **Watermark.** ``stats_watermark.rolled_until`` (hour-aligned) splits the calls in two:
  every call with ``created_at < rolled_until`` is in the rollups, every later one is the
  *tail*. The overview reads rollups + tail in **one statement** (one snapshot), so an
  aggregation committing meanwhile can neither double-count nor drop a call.
* **Late commits.** ``created_at`` is the call's transaction start, and the row becomes
  visible only at commit. The watermark therefore only advances to the hour before
  ``now() - grace`` (:data:`GRACE`, 15 min, longer than any context call can live: API
  Gateway gives up after 29 s and the functions time out well before 15 min), so no call can
  commit behind the watermark.
* **Idempotence.** Each run recomputes *whole* hours from the raw calls (which are insert-only)
  and upserts them: re-running, or re-running a window with ``rerun_from``, writes the same
  rows. Runs are serialised by a row lock on the watermark.
* **Percentiles.** ``recall_p50_ms`` / ``recall_p99_ms`` are *histogram percentiles*: the
  upper bound of the bucket that holds the nearest-rank percentile. Computed from merged
  rollups or straight from the raw calls they are exactly equal (bucketing is monotonic, so
  the k-th smallest latency lies in the bucket where the cumulative count reaches k), and they
  are the true percentile rounded up to the bucket resolution (≤ ~25 % above 10 ms).
  A latency above the last bound is reported as the last bound (30 s, beyond the API timeout).
"""

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from pydantic import BaseModel, ConfigDict

from haki.db import Database

#: Upper bounds (ms, exclusive) of the latency histogram buckets; one more bucket counts the
#: latencies at or above the last bound. Changing them invalidates existing rollups: append
#: a migration that clears ``stats_rollups`` and resets the watermark.
LATENCY_BOUNDS_MS: tuple[float, ...] = (
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 18, 20, 25, 30, 35, 40, 45, 50, 60, 70, 80, 90,
    100, 120, 140, 160, 180, 200, 250, 300, 350, 400, 450, 500, 600, 700, 800, 900, 1000,
    1250, 1500, 2000, 2500, 3000, 4000, 5000, 7500, 10000, 15000, 20000, 30000,
)
HISTOGRAM_SIZE = len(LATENCY_BOUNDS_MS) + 1
#: How far behind ``now()`` the watermark stays (see the module docstring).
GRACE = timedelta(minutes=15)
#: Days of ``events_this_week``, today (UTC) included.
WEEK_DAYS = 7


# --------------------------------------------------------------------------- pure histogram


def latency_bucket(latency_ms: float) -> int:
    """The bucket of a latency; the same as SQL ``width_bucket(latency, bounds)``."""
    return bisect.bisect_right(LATENCY_BOUNDS_MS, latency_ms)


def histogram(latencies_ms: Sequence[float]) -> list[int]:
    counts = [0] * HISTOGRAM_SIZE
    for latency in latencies_ms:
        counts[latency_bucket(latency)] += 1
    return counts


def merge_histograms(histograms: Sequence[Sequence[int]]) -> list[int]:
    """Element-wise sum: the histogram of the union of the calls."""
    merged = [0] * HISTOGRAM_SIZE
    for counts in histograms:
        if len(counts) != HISTOGRAM_SIZE:
            raise ValueError(f"a latency histogram has {HISTOGRAM_SIZE} buckets, not {len(counts)}")
        for i, n in enumerate(counts):
            merged[i] += n
    return merged


def histogram_percentile(counts: Sequence[int], percent: int) -> float | None:
    """Nearest-rank percentile at bucket resolution (upper bound of its bucket); ``None`` when
    the histogram is empty. ``percent`` is an integer so that the rank is exact."""
    total = sum(counts)
    if total == 0:
        return None
    rank = max(1, -(-total * percent // 100))  # ceil without float rounding
    cumulative = 0
    for i, n in enumerate(counts):
        cumulative += n
        if cumulative >= rank:
            return float(LATENCY_BOUNDS_MS[min(i, len(LATENCY_BOUNDS_MS) - 1)])
    raise AssertionError("unreachable: the ranks stop at the total")


# --------------------------------------------------------------------------- overview


class DayCount(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    date: date
    count: int


class StatsOverview(BaseModel):
    """``GET /v1/stats/overview``. Latency and rates are ``null`` until calls exist."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    project_id: str
    subject_id: str | None
    active_facts: int
    open_conflicts: int
    events_this_week: list[DayCount]
    recall_count: int
    recall_p50_ms: float | None
    recall_p99_ms: float | None
    #: Share of context calls that served at least one fact.
    injection_rate: float | None
    #: Alias of ``injection_rate``, kept for older clients.
    hit_rate: float | None
    context_tokens_served: int


@dataclass(frozen=True)
class CallTotals:
    """Figures over a set of calls; the overview derives rates and percentiles from them."""

    calls: int
    calls_with_facts: int
    tokens_served: int
    latency_hist: list[int]


# One statement, hence one snapshot: the watermark, the rollups below it and the raw tail
# above it are read together. Rollups by primary key (project_id, subject_id, bucket_start),
# tail by context_calls_scope_idx (0005), facts by facts_scope_idx (0002), events by
# events_scope_idx (0002), conflicts by conflict_sets_open_idx (0003).
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


# --------------------------------------------------------------------------- aggregation


@dataclass(frozen=True)
class AggregationResult:
    #: Hours recomputed: ``[rolled_from, rolled_until)``; equal when there was nothing to do.
    rolled_from: datetime
    rolled_until: datetime
    rollup_rows: int
    calls: int


# Per (scope, hour, latency bucket): context_calls_created_idx (0005) serves the time range.
_ROLLUP_SOURCE_SQL = """
SELECT project_id, subject_id, date_trunc('hour', created_at, 'UTC') AS bucket_start,
       width_bucket(latency_ms::float8, %(bounds)s::float8[]) AS latency_bucket,
       count(*) AS calls,
       count(*) FILTER (WHERE facts_served > 0) AS calls_with_facts,
       coalesce(sum(token_count), 0) AS tokens_served
FROM context_calls
WHERE created_at >= %(from)s AND created_at < %(until)s
GROUP BY 1, 2, 3, 4
"""

_UPSERT_SQL = """
INSERT INTO stats_rollups
    (project_id, subject_id, bucket_start, calls, calls_with_facts, tokens_served, latency_hist)
VALUES (%s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (project_id, subject_id, bucket_start) DO UPDATE SET
    calls = excluded.calls,
    calls_with_facts = excluded.calls_with_facts,
    tokens_served = excluded.tokens_served,
    latency_hist = excluded.latency_hist
"""


def aggregate(
    db: Database, *, grace: timedelta = GRACE, rerun_from: datetime | None = None
) -> AggregationResult:
    """Roll calls up to the hour before ``now() - grace`` and advance the watermark.

    Runs as ``haki_stats`` (every project), in one transaction. Recomputes every whole hour
    from the watermark (or from the hour of ``rerun_from``, to rebuild a past window) up to
    the new watermark. The watermark never moves back.
    """
    with db.transaction() as conn:
        watermark_row = conn.execute(
            "SELECT rolled_until FROM stats_watermark FOR UPDATE"
        ).fetchone()
        cutoff, earliest, rerun_hour = conn.execute(
            "SELECT date_trunc('hour', now() - %s, 'UTC'), "
            "       (SELECT date_trunc('hour', min(created_at), 'UTC') FROM context_calls), "
            "       date_trunc('hour', %s::timestamptz, 'UTC')",
            (grace, rerun_from),
        ).fetchone()
        watermark: datetime | None = watermark_row[0] if watermark_row else None
        start = watermark or earliest or cutoff
        if rerun_hour is not None:
            start = min(start, rerun_hour)
        start = min(start, cutoff)
        rollups: list[RollupRow] = []
        if start < cutoff:
            rows = conn.execute(
                _ROLLUP_SOURCE_SQL,
                {"bounds": list(LATENCY_BOUNDS_MS), "from": start, "until": cutoff},
            ).fetchall()
            rollups = fold_rollups(rows)
            if rollups:
                with conn.cursor() as cur:
                    cur.executemany(_UPSERT_SQL, rollups)
        new_watermark = max(watermark or cutoff, cutoff)
        conn.execute(
            "INSERT INTO stats_watermark (rolled_until) VALUES (%s) "
            "ON CONFLICT (singleton) DO UPDATE SET rolled_until = excluded.rolled_until",
            (new_watermark,),
        )
    return AggregationResult(start, new_watermark, len(rollups), sum(r[3] for r in rollups))


RollupRow = tuple[str, str, datetime, int, int, int, list[int]]


def fold_rollups(rows: Sequence[tuple[str, str, datetime, int, int, int, int]]) -> list[RollupRow]:
    """Fold per-latency-bucket counts into one rollup row per (project, subject, hour)."""
    folded: dict[tuple[str, str, datetime], list] = {}
    for project_id, subject_id, hour, bucket, calls, with_facts, tokens in rows:
        acc = folded.setdefault((project_id, subject_id, hour), [0, 0, 0, [0] * HISTOGRAM_SIZE])
        acc[0] += calls
        acc[1] += with_facts
        acc[2] += tokens
        acc[3][bucket] += calls
    return [(p, s, h, a[0], a[1], a[2], a[3]) for (p, s, h), a in sorted(folded.items())]
