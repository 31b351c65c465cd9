# Generated from docs/openapi.json by clients/python/generate_models.py (datamodel-code-generator).
# Do not edit: run that script again.

from __future__ import annotations

from datetime import date as date_aliased
from typing import Any, Literal
from uuid import UUID

from haki_client._base import ContextPacketModel, ContextResponseModel, Model
from pydantic import AwareDatetime, ConfigDict


class CallFeedback(Model):
    """
    Feedback on a context call, one per source (``POST /v1/calls/{trace_id}/feedback``).
    """

    missing: list[UUID]
    note: str | None
    source: Literal["agent", "person"]
    updated_at: AwareDatetime
    used: list[UUID]
    verdict: Literal["helpful", "unhelpful", "wrong"] | None


class CallSummary(Model):
    """
    One context call as the listing shows it: what was asked and what was served, without
    the packet.
    """

    budget_tokens: int
    candidates: int
    created_at: AwareDatetime
    empty_reason: Literal["no_memory", "no_relevant_memory", "all_filtered"] | None
    episodes_served: int
    facts_served: int
    latency_ms: float
    missing_reported: int
    purpose: str | None
    query: str
    status: Literal["ok", "degraded"]
    subject_id: str
    token_count: int
    trace_id: UUID
    warnings: list[str]


class ConflictFact(Model):
    id: UUID
    predicate: str
    status: Literal["candidate", "active", "superseded", "disputed", "disabled", "deleted"]
    value: Any


class ConflictView(Model):
    created_at: AwareDatetime
    facts: list[ConflictFact]
    id: UUID
    reason: str | None
    resolved_at: AwareDatetime | None
    status: Literal["open", "resolved"]
    subject_id: str


class ContextRequest(Model):
    """
    ``POST /v1/context``.
    """

    model_config = ConfigDict(
        extra="forbid",
    )
    budget_tokens: int = 900
    project_id: str | None = None
    """
    The API key's project when absent (a key is bound to one project).
    """
    purpose: str | None = None
    query: str
    render: bool = False
    """
    Also return the packet rendered as the prompt-ready <haki_memory> block (the response's `block`).
    """
    subject_id: str
    thread_id: str | None = None
    """
    Narrows the episodes to this conversation thread of the subject; facts stay subject-wide.
    """


class DayCount(Model):
    count: int
    date: date_aliased


class ErrorDetail(Model):
    code: str
    """
    stable error code
    """
    message: str
    """
    human-readable, safe to show
    """


class EventIn(Model):
    """
    An episode to store. ``id`` or ``idempotency_key`` (at most one) makes its delivery
    idempotent: a replay returns the original id and writes nothing.
    """

    model_config = ConfigDict(
        extra="forbid",
    )
    id: UUID | None = None
    idempotency_key: str | None = None
    kind: str
    occurred_at: AwareDatetime | None = None
    payload: dict[str, Any] | None = None
    subject_id: str
    thread_id: str | None = None


class EventView(Model):
    id: UUID
    kind: str
    occurred_at: AwareDatetime
    payload: dict[str, Any]
    recorded_at: AwareDatetime
    thread_id: str | None = None


class EventWritten(Model):
    deduplicated: bool
    id: UUID


class EventsResponse(Model):
    events: list[EventWritten]


class ExportedConflict(Model):
    fact_ids: list[UUID]
    id: UUID
    project_id: str
    reason: str | None
    status: str = "open"
    subject_id: str


class ExportedEvent(Model):
    id: UUID
    kind: str
    occurred_at: AwareDatetime
    payload: dict[str, Any]
    project_id: str
    subject_id: str


class ExportedQuery(Model):
    budget_tokens: int
    category: str | None
    expected_event_ids: list[UUID]
    expected_fact_ids: list[UUID]
    project_id: str
    purpose: str | None
    query: str
    subject_id: str


class FactIn(Model):
    model_config = ConfigDict(
        extra="forbid",
    )
    confidence: float | None = None
    predicate: str
    source_event_ids: list[UUID] | None = None
    status: Literal["candidate", "active"] = "active"
    subject_id: str
    supersedes_id: UUID | None = None
    valid_from: AwareDatetime | None = None
    valid_to: AwareDatetime | None = None
    value: Any
    volatility: Literal["stable", "slow", "volatile", "ephemeral"] = "stable"


class FactRecord(Model):
    """
    A fact to store. ``id`` is generated when absent; an existing id is updated (upsert).
    """

    confidence: float | None = None
    id: UUID | None = None
    last_reinforced_at: AwareDatetime | None = None
    predicate: str
    project_id: str
    qualifiers: dict[str, Any] | None = None
    recorded_from: AwareDatetime | None = None
    source_event_ids: list[UUID] | None = None
    status: Literal["candidate", "active", "superseded", "disputed", "disabled", "deleted"] = (
        "active"
    )
    subject_id: str
    supersedes_id: UUID | None = None
    valid_from: AwareDatetime | None = None
    valid_to: AwareDatetime | None = None
    value: Any
    version: int = 1
    volatility: Literal["stable", "slow", "volatile", "ephemeral"] = "stable"


class FactStatusRequest(Model):
    model_config = ConfigDict(
        extra="forbid",
    )
    project_id: str | None = None
    status: Literal["candidate", "active", "superseded", "disputed", "disabled", "deleted"]


class FactView(Model):
    confidence: float | None
    id: UUID
    last_reinforced_at: AwareDatetime | None
    predicate: str
    qualifiers: dict[str, Any]
    recorded_from: AwareDatetime
    recorded_to: AwareDatetime | None
    source_event_ids: list[UUID]
    status: Literal["candidate", "active", "superseded", "disputed", "disabled", "deleted"]
    subject_id: str
    supersedes_id: UUID | None
    valid_from: AwareDatetime | None
    valid_to: AwareDatetime | None
    value: Any
    version: int
    volatility: Literal["stable", "slow", "volatile", "ephemeral"]


class FactWritten(Model):
    conflict_id: UUID | None = None
    id: UUID
    outcome: Literal["created", "reinforced", "superseded", "conflict"]
    status: Literal["candidate", "active", "superseded", "disputed", "disabled", "deleted"]
    supersedes_id: UUID | None = None
    version: int


class FactsRequest(Model):
    model_config = ConfigDict(
        extra="forbid",
    )
    facts: list[FactIn]
    project_id: str | None = None


class FactsResponse(Model):
    facts: list[FactWritten]


class FeedbackRequest(Model):
    """
    ``POST /v1/calls/{trace_id}/feedback``: what the answer to a call used, and what the
    call should have served. A repeat from the same ``source`` replaces the previous one.
    """

    model_config = ConfigDict(
        extra="forbid",
    )
    missing: list[UUID] | None = None
    note: str | None = None
    project_id: str | None = None
    source: Literal["agent", "person"] = "agent"
    subject_id: str
    used: list[UUID] | None = None
    verdict: Literal["helpful", "unhelpful", "wrong"] | None = None


class ForgetRequest(Model):
    """
    Forget one subject or one fact: ``disable`` stops serving it (reversible), ``enable``
    serves it again, ``delete`` erases the rows (right to erasure) and returns a receipt.
    """

    model_config = ConfigDict(
        extra="forbid",
    )
    fact_id: UUID | None = None
    mode: Literal["disable", "enable", "delete"]
    project_id: str | None = None
    subject_id: str | None = None


class ForgetResponse(Model):
    counts: dict[str, int]
    forgotten_at: AwareDatetime
    mode: Literal["disable", "enable", "delete"]
    receipt_id: UUID | None
    target: Literal["subject", "fact"]


class Health(Model):
    """
    ``ok``: the API answers; ``ready``: it reached its database too.
    """

    status: Literal["ok", "ready"]


class MessageIn(Model):
    """
    A message of a conversation, stored as a ``conversation.message`` event whose payload
    is ``{"role", "name" (when given), "text"}``. Idempotent per message: its event id is
    ``id`` when given, else derived from the subject and ``message_id``, else from the subject,
    the speaker, the content and ``occurred_at``; one of the three is required, so that a
    retried call never stores a message twice.
    """

    model_config = ConfigDict(
        extra="forbid",
    )
    content: str
    id: UUID | None = None
    message_id: str | None = None
    name: str | None = None
    occurred_at: AwareDatetime | None = None
    role: Literal["user", "assistant", "system", "tool"]


class PacketEpisode(Model):
    event_id: UUID
    excerpt: str
    kind: str
    name: str | None = None
    occurred_at: AwareDatetime
    role: str | None = None
    thread_id: str | None = None


class PacketFact(Model):
    confidence: float | None
    id: UUID
    predicate: str
    source_event_ids: list[UUID]
    unconfirmed: bool = False
    valid_from: AwareDatetime | None
    value: Any


class Ranking(Model):
    """
    How the service fuses its two retrieval arms, for drawing a fused score as its parts:
    each arm adds ``weight / (rrf_k + rank)``.
    """

    rrf_k: float
    rrf_weight_text: float
    rrf_weight_vector: float


class ResolveRequest(Model):
    model_config = ConfigDict(
        extra="forbid",
    )
    keep_fact_id: UUID
    project_id: str | None = None


class ResolveResponse(Model):
    conflict_id: UUID
    kept_fact_id: UUID
    resolved_at: AwareDatetime
    superseded_fact_ids: list[UUID]


class SeriesPoint(Model):
    """
    One bucket of ``GET /v1/stats/series``: the calls that started in it.
    """

    calls: int
    calls_with_facts: int
    calls_with_feedback: int
    calls_with_missing: int
    injection_rate: float | None
    items_used: int
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    start: AwareDatetime
    tokens_per_used_item: float | None
    tokens_served: int
    used_share: float | None


class StatsOverview(Model):
    """
    ``GET /v1/stats/overview``. Latency and rates are ``null`` until calls exist.
    """

    active_facts: int
    context_tokens_served: int
    events_this_week: list[DayCount]
    hit_rate: float | None
    injection_rate: float | None
    open_conflicts: int
    project_id: str
    recall_count: int
    recall_p50_ms: float | None
    recall_p99_ms: float | None
    subject_id: str | None


class StatsSeries(Model):
    """
    ``GET /v1/stats/series``: the buckets that hold calls, oldest first.
    """

    granularity: Literal["hour", "day"]
    points: list[SeriesPoint]
    project_id: str
    since: AwareDatetime
    subject_id: str | None


class SubjectView(Model):
    disabled: bool
    events: int
    facts: int
    last_activity_at: AwareDatetime
    open_conflicts: int
    subject_id: str


class TraceDecision(Model):
    """
    One decision of the trace: what was decided for one candidate considered, and why.
    """

    action: Literal["included", "excluded", "blocked"]
    event_id: UUID | None
    expanded_from: UUID | None = None
    fact_id: UUID | None
    ordinal: int
    rank: int | None
    reason_code: str
    score: float | None
    similarity: float | None
    text_arm_rank: int | None = None
    text_rank: float | None
    tokens: int | None
    unconfirmed: bool = False
    vector_rank: int | None = None


class CallPage(Model):
    calls: list[CallSummary]
    next_cursor: str | None


class ConflictPage(Model):
    conflicts: list[ConflictView]
    next_cursor: str | None


class ContextPacket(ContextPacketModel):
    empty_reason: Literal["no_memory", "no_relevant_memory", "all_filtered"] | None
    episodes: list[PacketEpisode]
    facts: list[PacketFact]
    status: Literal["ok", "degraded"]
    warnings: list[str]


class ContextResponse(ContextResponseModel):
    block: str | None = None
    """
    The packet as the prompt-ready <haki_memory> block: every memory text on one line, without control or invisible format characters, its angle brackets and their look-alikes replaced by ‹ ›, so memory can neither close the block nor open another. Empty when the packet is empty. Present only when the request asked `render: true`.
    """
    packet: ContextPacket
    token_count: int
    trace_id: UUID | None


class Error(Model):
    error: ErrorDetail


class EvalSet(Model):
    """
    A labelled set: what ``haki eval FILE`` reads.
    """

    conflicts: list[ExportedConflict]
    events: list[ExportedEvent]
    facts: list[FactRecord]
    queries: list[ExportedQuery]


class EventPage(Model):
    events: list[EventView]
    next_cursor: str | None


class EventsRequest(Model):
    """
    A batch of ``events``, or of ``messages`` of one ``subject_id`` (a turn or a whole
    conversation, optionally of one ``thread_id``): one of the two lists. The messages of a
    batch are said in the order listed.
    """

    model_config = ConfigDict(
        extra="forbid",
    )
    events: list[EventIn] | None = None
    messages: list[MessageIn] | None = None
    project_id: str | None = None
    subject_id: str | None = None
    thread_id: str | None = None


class FactPage(Model):
    facts: list[FactView]
    next_cursor: str | None


class FactStatusResponse(Model):
    conflict_id: UUID | None = None
    fact: FactView


class InspectResponse(Model):
    budget_tokens: int
    created_at: AwareDatetime
    decisions: list[TraceDecision]
    feedback: list[CallFeedback] | None = None
    packet: ContextPacket
    project_id: str
    purpose: str | None
    query: str
    subject_id: str
    token_count: int
    trace_id: UUID


class SubjectPage(Model):
    next_cursor: str | None
    subjects: list[SubjectView]


class CallDetail(Model):
    """
    One call: its packet and every decision (as ``GET /v1/inspect``), the current text of
    each candidate (absent once erased), and the packet as the ``<haki_memory>`` block.
    """

    ranking: Ranking
    rendered: str
    texts: dict[str, str]
    trace: InspectResponse