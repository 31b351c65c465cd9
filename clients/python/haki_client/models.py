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

from pydantic import BaseModel, ConfigDict, Field

Status = Literal["ok", "degraded"]
EmptyReason = Literal["no_memory", "no_relevant_memory", "all_filtered"]
TraceAction = Literal["included", "excluded", "blocked"]
FactStatus = Literal["candidate", "active", "superseded", "disputed", "disabled", "deleted"]
Volatility = Literal["stable", "slow", "volatile", "ephemeral"]
FactOutcome = Literal["created", "reinforced", "superseded", "conflict"]
ForgetMode = Literal["disable", "delete"]


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


# --------------------------------------------------------------------------- events


class EventIn(_Request):
    """An episode to store. ``id`` or ``idempotency_key`` (at most one) makes its delivery
    idempotent; the client gives an event that has neither an idempotency key of its own, so
    a retried batch is never stored twice."""

    subject_id: str
    kind: str
    occurred_at: datetime | None = None
    payload: dict[str, Any] = Field(default_factory=dict)
    id: UUID | None = None
    idempotency_key: str | None = None


class EventsRequest(_Request):
    """``POST /v1/events``: 1 to 100 events."""

    project_id: str
    events: list[EventIn]


class EventWritten(_Response):
    id: UUID
    #: The event had been stored before (same id or idempotency key): nothing was written.
    deduplicated: bool


class EventsResponse(_Response):
    events: list[EventWritten]


# --------------------------------------------------------------------------- facts


class FactIn(_Request):
    subject_id: str
    predicate: str
    value: Any
    status: Literal["candidate", "active"] = "active"
    confidence: float | None = None
    volatility: Volatility = "stable"
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    supersedes_id: UUID | None = None
    source_event_ids: list[UUID] = Field(default_factory=list)


class FactsRequest(_Request):
    """``POST /v1/facts``: 1 to 100 facts."""

    project_id: str
    facts: list[FactIn]


class FactWritten(_Response):
    id: UUID
    outcome: FactOutcome
    status: FactStatus
    version: int
    conflict_id: UUID | None = None
    supersedes_id: UUID | None = None


class FactsResponse(_Response):
    facts: list[FactWritten]


class FactView(_Response):
    id: UUID
    subject_id: str
    predicate: str
    value: Any
    qualifiers: dict[str, Any]
    status: FactStatus
    confidence: float | None
    volatility: Volatility
    valid_from: datetime | None
    valid_to: datetime | None
    recorded_from: datetime
    recorded_to: datetime | None
    last_reinforced_at: datetime | None
    supersedes_id: UUID | None
    source_event_ids: list[UUID]
    version: int


class FactPage(_Response):
    facts: list[FactView]
    next_cursor: str | None


class FactStatusRequest(_Request):
    project_id: str
    status: FactStatus


class FactStatusResponse(_Response):
    fact: FactView
    conflict_id: UUID | None = None


# --------------------------------------------------------------------------- conflicts


class ConflictFact(_Response):
    id: UUID
    predicate: str
    value: Any
    status: FactStatus


class ConflictView(_Response):
    id: UUID
    subject_id: str
    status: Literal["open", "resolved"]
    reason: str | None
    created_at: datetime
    resolved_at: datetime | None
    facts: list[ConflictFact]


class ConflictPage(_Response):
    conflicts: list[ConflictView]
    next_cursor: str | None


class ResolveRequest(_Request):
    project_id: str
    keep_fact_id: UUID


class ResolveResponse(_Response):
    conflict_id: UUID
    kept_fact_id: UUID
    superseded_fact_ids: list[UUID]
    resolved_at: datetime


# --------------------------------------------------------------------------- forget


class ForgetRequest(_Request):
    """Forget one subject or one fact: ``disable`` stops serving its facts (reversible),
    ``delete`` erases the rows (right to erasure) and returns a receipt."""

    project_id: str
    mode: ForgetMode
    subject_id: str | None = None
    fact_id: UUID | None = None


class ForgetResponse(_Response):
    receipt_id: UUID | None
    target: Literal["subject", "fact"]
    mode: ForgetMode
    counts: dict[str, int]
    forgotten_at: datetime


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
        EventIn, EventsRequest, EventWritten, EventsResponse,
        FactIn, FactsRequest, FactWritten, FactsResponse, FactView, FactPage,
        FactStatusRequest, FactStatusResponse,
        ConflictFact, ConflictView, ConflictPage, ResolveRequest, ResolveResponse,
        ForgetRequest, ForgetResponse,
    )
}
