"""The scheduled rollup of context calls into hourly, mergeable rows (role ``haki_stats``)."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from haki.db import Database
from haki.stats.feedback import (
    FEEDBACK_COLUMNS,
    FEEDBACK_PER_CALL,
    FEEDBACK_SUMS,
    FeedbackTotals,
)
from haki.stats.histogram import HISTOGRAM_SIZE, LATENCY_BOUNDS_MS

#: How far behind ``now()`` the watermark stays (see the package docstring).
GRACE = timedelta(minutes=15)


@dataclass(frozen=True)
class AggregationResult:
    #: Hours recomputed: ``[rolled_from, rolled_until)``; equal when there was nothing to do.
    rolled_from: datetime
    rolled_until: datetime
    rollup_rows: int
    calls: int


# Per (scope, hour, latency bucket), over the calls of the window [from, until) and, below
# it, the hours whose feedback was written (or redacted) in [feedback_from, feedback_until):
# feedback comes after its call, often once its hour is rolled up, so such an hour is
# recomputed whole. context_calls_created_idx serves the window; call_feedback's
# updated_at index the feedback written since the last run.
_ROLLUP_SOURCE_SQL = f"""
WITH refold AS (
    SELECT DISTINCT project_id, subject_id,
           date_trunc('hour', call_created_at, 'UTC') AS hour
    FROM call_feedback
    WHERE updated_at >= %(feedback_from)s AND updated_at < %(feedback_until)s
      AND call_created_at < %(from)s
),
calls AS (
    SELECT trace_id, project_id, subject_id, created_at, latency_ms, facts_served,
           episodes_served, token_count
    FROM context_calls
    WHERE created_at >= %(from)s AND created_at < %(until)s
    UNION ALL
    SELECT c.trace_id, c.project_id, c.subject_id, c.created_at, c.latency_ms, c.facts_served,
           c.episodes_served, c.token_count
    FROM refold AS r
    JOIN context_calls AS c
      ON c.project_id = r.project_id AND c.subject_id = r.subject_id
     AND c.created_at >= r.hour AND c.created_at < r.hour + interval '1 hour'
),
fb AS ({FEEDBACK_PER_CALL})
SELECT c.project_id, c.subject_id, date_trunc('hour', c.created_at, 'UTC') AS bucket_start,
       width_bucket(c.latency_ms::float8, %(bounds)s::float8[]) AS latency_bucket,
       count(*) AS calls,
       count(*) FILTER (WHERE c.facts_served > 0) AS calls_with_facts,
       coalesce(sum(c.token_count), 0) AS tokens_served,
       {FEEDBACK_SUMS}
FROM calls AS c
LEFT JOIN fb ON fb.trace_id = c.trace_id AND fb.call_created_at = c.created_at
GROUP BY 1, 2, 3, 4
"""

_UPSERT_SQL = f"""
INSERT INTO stats_rollups
    (project_id, subject_id, bucket_start, calls, calls_with_facts, tokens_served, latency_hist,
     {", ".join(FEEDBACK_COLUMNS)})
VALUES ({", ".join(["%s"] * (7 + len(FEEDBACK_COLUMNS)))})
ON CONFLICT (project_id, subject_id, bucket_start) DO UPDATE SET
    calls = excluded.calls,
    calls_with_facts = excluded.calls_with_facts,
    tokens_served = excluded.tokens_served,
    latency_hist = excluded.latency_hist,
    {", ".join(f"{c} = excluded.{c}" for c in FEEDBACK_COLUMNS)}
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
            "SELECT rolled_until, feedback_until FROM stats_watermark FOR UPDATE"
        ).fetchone()
        bounds_row = conn.execute(
            "SELECT date_trunc('hour', now() - %s, 'UTC'), "
            "       (SELECT date_trunc('hour', min(created_at), 'UTC') FROM context_calls), "
            "       date_trunc('hour', %s::timestamptz, 'UTC'), now() - %s",
            (grace, rerun_from, grace),
        ).fetchone()
        assert bounds_row is not None
        cutoff: datetime = bounds_row[0]
        earliest: datetime | None = bounds_row[1]
        rerun_hour: datetime | None = bounds_row[2]
        feedback_cutoff: datetime = bounds_row[3]
        watermark: datetime | None = watermark_row[0] if watermark_row else None
        feedback_from: datetime | None = watermark_row[1] if watermark_row else None
        start = watermark or earliest or cutoff
        if rerun_hour is not None:
            start = min(start, rerun_hour)
        start = min(start, cutoff)
        rows = conn.execute(_ROLLUP_SOURCE_SQL, {
            "bounds": list(LATENCY_BOUNDS_MS), "from": start, "until": cutoff,
            "feedback_from": feedback_from or datetime.min.replace(tzinfo=UTC),
            "feedback_until": feedback_cutoff}).fetchall()
        rollups = fold_rollups(rows)
        if rollups:
            with conn.cursor() as cur:
                cur.executemany(_UPSERT_SQL, rollups)
        new_watermark = max(watermark or cutoff, cutoff)
        conn.execute(
            "INSERT INTO stats_watermark (rolled_until, feedback_until) VALUES (%s, %s) "
            "ON CONFLICT (singleton) DO UPDATE SET rolled_until = excluded.rolled_until, "
            "feedback_until = excluded.feedback_until",
            (new_watermark, feedback_cutoff),
        )
    return AggregationResult(start, new_watermark, len(rollups), sum(r[3] for r in rollups))


#: (project, subject, hour, calls, calls with facts, tokens, latency histogram, then the
#: feedback figures in ``FEEDBACK_COLUMNS`` order).
RollupRow = tuple[Any, ...]


def fold_rollups(rows: Sequence[Sequence[Any]]) -> list[RollupRow]:
    """Fold per-latency-bucket rows into one rollup row per (project, subject, hour)."""
    # Per scope and hour: (calls, calls with facts, tokens), the latency histogram, feedback.
    folded: dict[tuple[str, str, datetime],
                 tuple[list[int], list[int], FeedbackTotals]] = {}
    for project_id, subject_id, hour, bucket, calls, with_facts, tokens, *feedback in rows:
        totals, hist, given = folded.setdefault(
            (project_id, subject_id, hour), ([0, 0, 0], [0] * HISTOGRAM_SIZE, FeedbackTotals()))
        totals[0] += calls
        totals[1] += with_facts
        totals[2] += tokens
        hist[bucket] += calls
        given.add(feedback)
    return [(p, s, h, t[0], t[1], t[2], hist, *given.values())
            for (p, s, h), (t, hist, given) in sorted(folded.items())]
