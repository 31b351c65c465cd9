"""``GET /v1/stats/series``: a project's (or one subject's) calls over time, bucket by bucket,
from the rollups plus the not-yet-rolled tail (one statement, one snapshot, as the overview)."""

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from haki.db import Database
from haki.stats.feedback import (
    FEEDBACK_COLUMNS,
    FEEDBACK_PER_CALL,
    FEEDBACK_SUMS,
    FeedbackTotals,
)
from haki.stats.histogram import HISTOGRAM_SIZE, LATENCY_BOUNDS_MS, histogram_percentile
from haki.stats.models import Granularity, SeriesPoint, StatsSeries

#: The rolled hours of the window (rollups by primary key; one subject's, or summed over the
#: project's subjects) and the raw tail above the watermark (context_calls_scope_idx or
#: context_calls_created_idx) grouped by bucket and latency histogram bucket, so that each row
#: holds a histogram to merge: a rolled row carries its own, a tail row one bucket's count.
#: The tail's calls are joined with their feedback (call_feedback primary key); a rolled hour
#: carries the feedback its last aggregation saw (feedback given since shows at the next run).
_SERIES_SQL = f"""
WITH wm AS (
    SELECT coalesce(max(rolled_until), '-infinity'::timestamptz) AS rolled_until
    FROM stats_watermark
),
calls AS (
    SELECT c.trace_id, c.project_id, c.created_at, c.facts_served, c.episodes_served,
           c.token_count, c.latency_ms
    FROM context_calls AS c, wm
    WHERE c.project_id = %(project_id)s
      AND (%(subject_id)s::text IS NULL OR c.subject_id = %(subject_id)s)
      AND c.created_at >= greatest(wm.rolled_until, %(since)s)
),
fb AS ({FEEDBACK_PER_CALL})
SELECT date_trunc(%(unit)s, r.bucket_start, 'UTC') AS t, r.calls, r.calls_with_facts,
       r.tokens_served, r.latency_hist, NULL::int AS bucket,
       {", ".join(f"r.{column}" for column in FEEDBACK_COLUMNS)}
FROM stats_rollups AS r, wm
WHERE r.project_id = %(project_id)s
  AND (%(subject_id)s::text IS NULL OR r.subject_id = %(subject_id)s)
  AND r.bucket_start >= %(since)s AND r.bucket_start < wm.rolled_until
UNION ALL
SELECT date_trunc(%(unit)s, c.created_at, 'UTC'), count(*)::int,
       (count(*) FILTER (WHERE c.facts_served > 0))::int, sum(c.token_count)::bigint, NULL,
       width_bucket(c.latency_ms::float8, %(bounds)s::float8[]),
       {FEEDBACK_SUMS}
FROM calls AS c
LEFT JOIN fb ON fb.trace_id = c.trace_id AND fb.call_created_at = c.created_at
GROUP BY 1, 6
"""


@dataclass
class _Bucket:
    calls: int = 0
    calls_with_facts: int = 0
    tokens_served: int = 0
    latency_hist: list[int] = field(default_factory=lambda: [0] * HISTOGRAM_SIZE)
    feedback: FeedbackTotals = field(default_factory=FeedbackTotals)


#: The longest window a series covers (rollups outlive the calls; a window of days is what
#: a chart shows).
MAX_SERIES_DAYS = 90


def series(db: Database, *, project_id: str, days: int, granularity: Granularity,
           subject_id: str | None = None) -> StatsSeries:
    """The buckets of the last ``days`` days that hold calls, oldest first, read as the
    runtime role in a transaction scoped to ``project_id``."""
    now = datetime.now(UTC)
    since = (now - timedelta(days=days)).replace(minute=0, second=0, microsecond=0)
    if granularity == "day":
        since = since.replace(hour=0)
    params = {"project_id": project_id, "subject_id": subject_id, "since": since,
              "unit": granularity, "bounds": list(LATENCY_BOUNDS_MS)}
    with db.transaction(project_id) as conn:
        rows = conn.execute(_SERIES_SQL, params).fetchall()
    buckets: dict[datetime, _Bucket] = {}
    for start, calls, with_facts, tokens, hist, bucket, *feedback in rows:
        into = buckets.setdefault(start, _Bucket())
        into.feedback.add(feedback)
        into.calls += calls
        into.calls_with_facts += with_facts
        into.tokens_served += int(tokens)
        if hist is not None:
            into.latency_hist = [a + b for a, b in zip(into.latency_hist, hist, strict=True)]
        else:
            into.latency_hist[bucket] += calls
    points = [SeriesPoint(
        start=start, calls=b.calls, calls_with_facts=b.calls_with_facts,
        injection_rate=b.calls_with_facts / b.calls if b.calls else None,
        tokens_served=b.tokens_served,
        latency_p50_ms=histogram_percentile(b.latency_hist, 50),
        latency_p95_ms=histogram_percentile(b.latency_hist, 95),
        calls_with_feedback=b.feedback.calls_with_feedback,
        items_used=b.feedback.items_used,
        used_share=b.feedback.used_share,
        calls_with_missing=b.feedback.calls_with_missing,
        tokens_per_used_item=b.feedback.tokens_per_used_item,
    ) for start, b in sorted(buckets.items())]
    return StatsSeries(project_id=project_id, subject_id=subject_id, granularity=granularity,
                       since=since, points=points)
