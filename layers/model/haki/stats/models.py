"""The response models of ``GET /v1/stats/overview`` and ``GET /v1/stats/series``."""

from datetime import date, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

#: The bucket of a series: an hour (the rollups' own) or a UTC day.
Granularity = Literal["hour", "day"]


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


class SeriesPoint(BaseModel):
    """One bucket of ``GET /v1/stats/series``: the calls that started in it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    start: datetime
    calls: int
    calls_with_facts: int
    #: Share of the bucket's calls that served at least one fact.
    injection_rate: float | None
    tokens_served: int
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    #: Calls with feedback (``POST /v1/calls/{trace_id}/feedback``, any source).
    calls_with_feedback: int
    #: Served items (facts and episodes) of those calls that their answers used.
    items_used: int
    #: Share of the served items of the calls with feedback that the answers used.
    used_share: float | None
    #: Calls whose feedback names memory that should have been served.
    calls_with_missing: int
    #: Tokens the calls with feedback served, per used item (the budget a used item costs).
    tokens_per_used_item: float | None


class StatsSeries(BaseModel):
    """``GET /v1/stats/series``: the buckets that hold calls, oldest first."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    project_id: str
    subject_id: str | None
    granularity: Granularity
    since: datetime
    points: list[SeriesPoint]
