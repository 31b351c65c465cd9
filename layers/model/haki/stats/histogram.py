"""The latency histogram over fixed bounds: any two merge by element-wise sum (in SQL), and
its percentiles are exact at bucket resolution (see the package docstring). Pure Python."""

from collections.abc import Sequence

#: Upper bounds (ms, exclusive) of the latency histogram buckets; one more bucket counts the
#: latencies at or above the last bound. Changing them invalidates existing rollups: append
#: a migration that clears ``stats_rollups`` and resets the watermark.
LATENCY_BOUNDS_MS: tuple[float, ...] = (
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 18, 20, 25, 30, 35, 40, 45, 50, 60, 70, 80, 90,
    100, 120, 140, 160, 180, 200, 250, 300, 350, 400, 450, 500, 600, 700, 800, 900, 1000,
    1250, 1500, 2000, 2500, 3000, 4000, 5000, 7500, 10000, 15000, 20000, 30000,
)
HISTOGRAM_SIZE = len(LATENCY_BOUNDS_MS) + 1


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
