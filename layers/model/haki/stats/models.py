"""The response model of ``GET /v1/stats/overview``."""

from datetime import date

from pydantic import BaseModel, ConfigDict


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
