"""Typed models of the Haki API, one per schema of ``docs/openapi.json``.

A test (``tests/clients/test_python_models.py``) compares the JSON schema of every model here
with the schema of the same name in the committed OpenAPI document and fails on any drift in
field names, types, formats, enumerations, nullability, defaults or required fields.

Two deliberate differences, both listed in that test:

* Response models **ignore** unknown fields (the service refuses them in requests, but a newer
  service may add a field to a response; an older client must keep working).
* Length and range bounds are not repeated here: the service checks them and answers with its
  stable error code (``missing_scope``, ``budget_exceeded``, ``validation_error``), which the
  client raises as :class:`haki_client.HakiError`. A client-side check would answer the same
  mistake with a different error.

``ContextResponse.trace_id`` is optional here: a client created with ``fail_open=True`` returns
an empty packet without a trace when the service cannot be reached (:attr:`ContextResponse.served`).
"""

from datetime import date, datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict

Status = Literal["ok", "degraded"]
EmptyReason = Literal["no_memory", "no_relevant_memory", "all_filtered"]
TraceAction = Literal["included", "excluded", "blocked"]


class _Response(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --------------------------------------------------------------------------- context


class ContextRequest(_Request):
    """``POST /v1/context``."""

    project_id: str
    subject_id: str
    query: str
    purpose: str | None = None
    budget_tokens: int = 900


class PacketFact(_Response):
    id: UUID
    predicate: str
    value: Any
    confidence: float | None
    valid_from: datetime | None
    source_event_ids: list[UUID]
    unconfirmed: bool = False


class PacketEpisode(_Response):
    event_id: UUID
    kind: str
    occurred_at: datetime
    excerpt: str


class ContextPacket(_Response):
    facts: list[PacketFact]
    episodes: list[PacketEpisode]
    warnings: list[str]
    status: Status
    empty_reason: EmptyReason | None

    @property
    def is_empty(self) -> bool:
        return not self.facts and not self.episodes


class ContextResponse(_Response):
    packet: ContextPacket
    token_count: int
    #: ``None`` only for the empty packet a ``fail_open`` client returns when the service is
    #: down; every packet the service served has its trace.
    trace_id: UUID | None

    @property
    def served(self) -> bool:
        """Whether the service answered (``False``: the fail-open empty packet)."""
        return self.trace_id is not None


# --------------------------------------------------------------------------- inspect


class TraceDecision(_Response):
    """One decision of the trace: what was decided for one candidate considered, and why."""

    ordinal: int
    fact_id: UUID | None
    event_id: UUID | None
    action: TraceAction
    reason_code: str
    rank: int | None
    score: float | None
    similarity: float | None
    text_rank: float | None
    recency: float | None
    tokens: int | None
    unconfirmed: bool = False
    #: Fused ranking: the row's rank in the vector arm and in the text arm (None: that arm did
    #: not return it; both None: an episode brought in as a neighbour), and the episode whose
    #: neighbour share raised its score. ``score`` is then the fused score.
    vector_rank: int | None = None
    text_arm_rank: int | None = None
    expanded_from: UUID | None = None


class InspectResponse(_Response):
    trace_id: UUID
    project_id: str
    subject_id: str
    query: str
    purpose: str | None
    budget_tokens: int
    packet: ContextPacket
    token_count: int
    created_at: datetime
    decisions: list[TraceDecision]


# --------------------------------------------------------------------------- stats


class DayCount(_Response):
    date: date
    count: int


class StatsOverview(_Response):
    """``GET /v1/stats/overview``. Latency and rates are ``null`` until calls exist."""

    project_id: str
    subject_id: str | None
    active_facts: int
    open_conflicts: int
    events_this_week: list[DayCount]
    recall_count: int
    recall_p50_ms: float | None
    recall_p99_ms: float | None
    injection_rate: float | None
    hit_rate: float | None
    context_tokens_served: int


# --------------------------------------------------------------------------- errors


class ErrorDetail(_Response):
    code: str
    message: str


class Error(_Response):
    """Every error body: ``{"error": {"code", "message"}}``."""

    error: ErrorDetail


#: OpenAPI component name → model. The drift test requires exactly these names.
SCHEMAS: dict[str, type[BaseModel]] = {
    model.__name__: model
    for model in (
        ContextRequest, PacketFact, PacketEpisode, ContextPacket, ContextResponse,
        TraceDecision, InspectResponse, DayCount, StatsOverview, Error,
    )
}
