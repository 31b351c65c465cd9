"""The scheduled rollup of context calls into hourly, mergeable rows (role ``haki_stats``)."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from haki.db import Database
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


# Per (scope, hour, latency bucket): context_calls_created_idx serves the time range.
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
        bounds_row = conn.execute(
            "SELECT date_trunc('hour', now() - %s, 'UTC'), "
            "       (SELECT date_trunc('hour', min(created_at), 'UTC') FROM context_calls), "
            "       date_trunc('hour', %s::timestamptz, 'UTC')",
            (grace, rerun_from),
        ).fetchone()
        assert bounds_row is not None
        cutoff: datetime = bounds_row[0]
        earliest: datetime | None = bounds_row[1]
        rerun_hour: datetime | None = bounds_row[2]
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
    # Per scope and hour: (calls, calls with facts, tokens) and the latency histogram.
    folded: dict[tuple[str, str, datetime], tuple[list[int], list[int]]] = {}
    for project_id, subject_id, hour, bucket, calls, with_facts, tokens in rows:
        totals, hist = folded.setdefault(
            (project_id, subject_id, hour), ([0, 0, 0], [0] * HISTOGRAM_SIZE))
        totals[0] += calls
        totals[1] += with_facts
        totals[2] += tokens
        hist[bucket] += calls
    return [(p, s, h, t[0], t[1], t[2], hist) for (p, s, h), (t, hist) in sorted(folded.items())]
