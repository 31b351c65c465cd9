"""Usage statistics: the overview of one project (docs/spec.md §5) and the rollup aggregation
(§7), one concern per module: ``histogram`` (the mergeable latency histogram, pure),
``models`` (the API responses), ``overview`` and ``series`` (the reads), ``aggregation``
(the scheduled rollup).

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
* **Feedback.** A rollup also counts its calls' feedback (``stats.feedback``). Feedback
  comes after its call, often once the call's hour is rolled up: each run also recomputes,
  whole, the hours of the calls whose feedback was written or redacted since the previous run
  (``call_feedback.updated_at`` against ``stats_watermark.feedback_until``, with the same
  grace), so a rolled hour catches up at the next run.
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

from haki.stats.aggregation import GRACE, AggregationResult, aggregate
from haki.stats.models import DayCount, Granularity, SeriesPoint, StatsOverview, StatsSeries
from haki.stats.overview import overview
from haki.stats.partitions import PartitionMaintenance, maintain_partitions
from haki.stats.series import MAX_SERIES_DAYS, series

__all__ = ["GRACE", "MAX_SERIES_DAYS", "AggregationResult", "DayCount", "Granularity",
           "PartitionMaintenance", "SeriesPoint", "StatsOverview", "StatsSeries", "aggregate",
           "maintain_partitions", "overview", "series"]
