"""The latency histogram: fixed bounds, and percentiles that are
exactly the nearest-rank percentile of the raw latencies rounded up to a bucket bound."""

import bisect
import itertools
import math
import random
from datetime import UTC, datetime

import pytest

from haki.stats.aggregation import fold_rollups
from haki.stats.histogram import HISTOGRAM_SIZE, LATENCY_BOUNDS_MS, histogram_percentile
from haki.stats.overview import CallTotals, build_overview


def histogram(latencies_ms: list[float]) -> list[int]:
    """The test's reference bucketing: half-open buckets like SQL ``width_bucket``."""
    counts = [0] * HISTOGRAM_SIZE
    for latency in latencies_ms:
        counts[bisect.bisect_right(LATENCY_BOUNDS_MS, latency)] += 1
    return counts


def _raw_percentile(latencies: list[float], percent: int) -> float:
    """The reference: nearest-rank percentile over raw values, then its bucket's bound."""
    ordered = sorted(latencies)
    value = ordered[math.ceil(len(ordered) * percent / 100) - 1]
    return float(LATENCY_BOUNDS_MS[min(bisect.bisect_right(LATENCY_BOUNDS_MS, value),
                                       len(LATENCY_BOUNDS_MS) - 1)])


def test_bounds_are_strictly_increasing() -> None:
    assert all(a < b for a, b in itertools.pairwise(LATENCY_BOUNDS_MS))


@pytest.mark.parametrize("seed", range(20))
def test_percentiles_agree_exactly_with_the_raw_computation(seed: int) -> None:
    rng = random.Random(seed)
    latencies = [rng.lognormvariate(rng.uniform(1, 5), 0.8) for _ in range(rng.randint(1, 500))]
    counts = histogram(latencies)
    for percent in (50, 99):
        assert histogram_percentile(counts, percent) == _raw_percentile(latencies, percent)


def test_percentile_rank_has_no_float_rounding() -> None:
    # 0.99 * 100 = 99.00000000000001 in floats: a float ceil would pick rank 100.
    latencies = [1.5] * 99 + [25_000.0]
    assert histogram_percentile(histogram(latencies), 99) == 2.0


def test_empty_histogram_has_no_percentile_and_overflow_reports_the_last_bound() -> None:
    assert histogram_percentile([0] * HISTOGRAM_SIZE, 50) is None
    assert histogram_percentile(histogram([90_000.0]), 50) == LATENCY_BOUNDS_MS[-1]


def test_overview_rates_are_null_without_calls() -> None:
    empty = CallTotals(0, 0, 0, [0] * HISTOGRAM_SIZE)
    overview = build_overview(empty, project_id="p", subject_id=None, active_facts=3,
                              open_conflicts=0, events_this_week=[])
    assert overview.recall_count == 0 and overview.context_tokens_served == 0
    assert overview.injection_rate is None and overview.hit_rate is None
    assert overview.recall_p50_ms is None and overview.recall_p99_ms is None


def test_hit_rate_is_an_alias_of_injection_rate() -> None:
    totals = CallTotals(4, 1, 100, histogram([3, 4, 5, 6]))
    overview = build_overview(totals, project_id="p", subject_id="s", active_facts=0,
                              open_conflicts=0, events_this_week=[])
    assert overview.injection_rate == overview.hit_rate == 0.25


def test_fold_rollups_sums_per_scope_and_hour() -> None:
    hour = datetime(2025, 1, 1, 10, tzinfo=UTC)
    # Each row: its latency bucket, calls, calls with facts, tokens, then the feedback figures
    # (calls with feedback, items they served, used, their tokens, calls with missing, missing).
    rows = [("p", "s", hour, 3, 2, 1, 50, 1, 4, 2, 30, 1, 2),
            ("p", "s", hour, 7, 1, 0, 20, 1, 3, 3, 20, 0, 0),
            ("p", "t", hour, 3, 1, 1, 5, 0, 0, 0, 0, 0, 0)]
    folded = fold_rollups(rows)
    assert [(r[0], r[1], r[3], r[4], r[5]) for r in folded] == [
        ("p", "s", 3, 1, 70), ("p", "t", 1, 1, 5)]
    assert folded[0][6][3] == 2 and folded[0][6][7] == 1 and sum(folded[0][6]) == 3
    assert folded[0][7:] == (2, 7, 5, 50, 1, 2) and folded[1][7:] == (0, 0, 0, 0, 0, 0)
