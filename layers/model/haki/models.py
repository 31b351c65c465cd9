"""Pydantic models at the edges: the public API's requests and responses, and the records of a
memory document (``haki load``). The core passes these between layers; handlers validate raw
input into them and serialise them back out.
"""

import re
import struct
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StringConstraints,
    field_validator,
)
from pydantic.json_schema import SkipJsonSchema

from haki.identities import canonical_identifier, canonical_predicate

#: Bounds of the public contract (docs/spec.md §4).
SCOPE_MAX_CHARS = 128
#: A scope id (and every other label: predicate, kind, idempotency key) holds no control
#: character (NUL cannot even be stored in PostgreSQL text) and is not blank. As a pattern, so
#: that the OpenAPI document states the rule the validation applies.
SCOPE_PATTERN = r"^[^\x00-\x1f\x7f]*[^\x00-\x20\x7f][^\x00-\x1f\x7f]*$"


def _identifier(value: object) -> object:
    return canonical_identifier(value) if isinstance(value, str) else value


def _predicate(value: object) -> object:
    return canonical_predicate(value) if isinstance(value, str) else value


#: Validators that put an identifier in its one canonical spelling (NFC, no invisible
#: character; a predicate in one script: :mod:`haki.identities`) before its bounds are checked
#: (so a length is the canonical one's). Placed after the field's string constraints in the
#: same ``Annotated``, so that an empty value is still "too short" (``missing_scope``).
IDENTIFIER = BeforeValidator(_identifier)
PREDICATE = BeforeValidator(_predicate)
#: A label as a type: bounded by its field, shaped by :data:`SCOPE_PATTERN`, canonical.
Label = Annotated[str, StringConstraints(pattern=SCOPE_PATTERN), IDENTIFIER]
#: A predicate as a type: a label in one script.
PredicateLabel = Annotated[str, StringConstraints(pattern=SCOPE_PATTERN), PREDICATE]
PURPOSE_MAX_CHARS = 128
#: A query longer than this is refused: nothing useful is that long, and it bounds the work.
QUERY_MAX_CHARS = 16_000
DEFAULT_BUDGET_TOKENS = 900
#: The largest budget accepted; a larger one is a client mistake (``budget_exceeded``).
MAX_BUDGET_TOKENS = 100_000

#: The instants a client may give (``occurred_at``, ``valid_from``, ...), in UTC: every one
#: can be stored, compared and read back as a Python datetime in any offset. A time valid in
#: its own offset can lie outside once in UTC (``0001-01-01T00:00:00+01:00`` is year 0 in
#: UTC); PostgreSQL would store it and every later read of the row would fail.
EARLIEST_TIME = datetime(1970, 1, 1, tzinfo=UTC)
LATEST_TIME = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
TIME_RANGE = f"{EARLIEST_TIME:%Y-%m-%dT%H:%M:%SZ} and {LATEST_TIME:%Y-%m-%dT%H:%M:%S.%fZ}"


def _in_time_range(value: datetime) -> datetime:
    try:
        utc = value.astimezone(UTC)
    except OverflowError:
        utc = None
    if utc is None or utc < EARLIEST_TIME:
        raise ValueError(f"must be between {TIME_RANGE} in UTC")
    return value


def _single(value: float) -> float:
    """``value`` rounded to single precision (what a ``real`` column holds)."""
    single: float = struct.unpack("f", struct.pack("f", value))[0]
    return single


def _stored_decimal(value: float | None) -> float | None:
    """A confidence as it was written: the column is ``real`` (single precision), whose 0.95
    reads back as 0.949999988079071; the shortest decimal that the column stores as the same
    value is the one that was written (0.95). A value that is no single-precision number
    (not read from the column) is kept."""
    if value is None or _single(value) != value:
        return value
    for digits in range(1, 10):
        shortest = float(f"{value:.{digits}g}")
        if _single(shortest) == value:
            return shortest
    return value


#: A confidence read from the database, served as the decimal written.
StoredConfidence = Annotated[float | None, AfterValidator(_stored_decimal)]


#: RFC 3339's date-time: a date, ``T`` (or a space), a time, an optional fraction and an
#: offset (``Z`` or ``±hh:mm``).
_RFC3339 = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})")


def _rfc3339(value: object) -> object:
    """A time given as text must be RFC 3339 with its offset: a number (seconds or
    milliseconds, told apart by their size) or another text is refused, never guessed."""
    if isinstance(value, datetime) or (isinstance(value, str) and _RFC3339.fullmatch(value)):
        return value
    raise ValueError("must be an RFC 3339 string with a time zone, e.g. 2026-12-01T09:30:00Z")


#: An instant a client gives: an RFC 3339 string with a time zone, within :data:`TIME_RANGE`
#: in UTC. Every timestamp field of a request and of a memory document is of this type.
Timestamp = Annotated[
    AwareDatetime, BeforeValidator(_rfc3339), AfterValidator(_in_time_range),
    Field(description=f"RFC 3339 with a time zone (a string, never a number), between "
                      f"{TIME_RANGE} in UTC"),
]

Status = Literal["ok", "degraded"]
EmptyReason = Literal["no_memory", "no_relevant_memory", "all_filtered"]
FactStatus = Literal["candidate", "active", "superseded", "disputed", "disabled", "deleted"]
Volatility = Literal["stable", "slow", "volatile", "ephemeral"]
TraceAction = Literal["included", "excluded", "blocked"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --------------------------------------------------------------------------- context


class ContextRequest(_Strict):
    """``POST /v1/context``."""

    project_id: Label | None = Field(
        default=None, min_length=1, max_length=SCOPE_MAX_CHARS,
        description="The API key's project when absent (a key is bound to one project).")
    subject_id: Label = Field(min_length=1, max_length=SCOPE_MAX_CHARS)
    query: str = Field(min_length=1, max_length=QUERY_MAX_CHARS)
    purpose: str | None = Field(default=None, max_length=PURPOSE_MAX_CHARS)
    budget_tokens: StrictInt = Field(default=DEFAULT_BUDGET_TOKENS, gt=0, le=MAX_BUDGET_TOKENS)
    thread_id: Label | None = Field(
        default=None, min_length=1, max_length=SCOPE_MAX_CHARS,
        description="Narrows the episodes to this conversation thread of the subject; facts "
                    "stay subject-wide.")
    render: StrictBool = Field(
        default=False,
        description="Also return the packet rendered as the prompt-ready <haki_memory> block "
                    "(the response's `block`).")

    @property
    def project(self) -> str:
        """The project served: the handler sets the key's when the body names none, so the
        core never sees a call without one."""
        if self.project_id is None:
            raise RuntimeError("a context call reached the core without its project")
        return self.project_id

    @field_validator("query")
    @classmethod
    def _query_without_nul(cls, value: str) -> str:
        """PostgreSQL text cannot hold NUL, and a NUL in free text carries no meaning: dropped.
        Whatever the schema admits is answered (a blank question simply matches little)."""
        return value.replace("\x00", "")

    @field_validator("purpose")
    @classmethod
    def _purpose_or_none(cls, value: str | None) -> str | None:
        """NUL dropped as in the query; a purpose left empty is no purpose (the packet then
        warns ``missing_purpose``)."""
        if value is None:
            return None
        return value.replace("\x00", "") or None


class PacketFact(_Strict):
    id: UUID
    predicate: str
    value: Any
    confidence: StoredConfidence
    valid_from: datetime | None
    source_event_ids: list[UUID]
    #: A ``slow`` fact past its volatility horizon: still served, to be confirmed.
    unconfirmed: bool = False


class PacketEpisode(_Strict):
    event_id: UUID
    kind: str
    occurred_at: datetime
    excerpt: str
    #: A message's speaker: its role (user, assistant, system, tool) and optional name; both
    #: None for an episode that is not a message.
    role: str | None = None
    name: str | None = None
    #: The conversation thread the episode belongs to; None when it has none.
    thread_id: str | None = None


class ContextPacket(_Strict):
    facts: list[PacketFact]
    episodes: list[PacketEpisode]
    warnings: list[str]
    status: Status
    empty_reason: EmptyReason | None


def _absent_by_default(schema: dict[str, Any]) -> None:
    """A field left out of the JSON when unset documents no default (it has no value)."""
    schema.pop("default", None)


class ContextResponse(_Strict):
    packet: ContextPacket
    token_count: int
    trace_id: UUID
    #: Only in the answer to a request with ``render: true``; absent otherwise, so an answer to
    #: a request that does not ask is what it was before the field existed.
    block: str | SkipJsonSchema[None] = Field(
        default=None, exclude_if=lambda value: value is None,
        json_schema_extra=_absent_by_default,
        description="The packet as the prompt-ready <haki_memory> block: every memory text on "
                    "one line, without control or invisible format characters, its angle "
                    "brackets and their look-alikes replaced by ‹ ›, so memory can neither close "
                    "the block nor open another. Empty when the packet is empty. Present only "
                    "when the request asked `render: true`.")


# --------------------------------------------------------------------------- inspect


# A plain slots dataclass rather than a model: the packer makes ~100 of these per context
# call, and inspect returns them as they are (Pydantic validates and documents its fields).
@dataclass(frozen=True, slots=True)
class TraceDecision:
    """One decision of the trace: what was decided for one candidate considered, and why."""

    #: Position in the order the packer considered the candidates.
    ordinal: int
    fact_id: UUID | None
    event_id: UUID | None
    action: TraceAction
    reason_code: str
    rank: int | None
    score: float | None
    similarity: float | None
    text_rank: float | None
    tokens: int | None
    unconfirmed: bool = False
    #: Fused ranking: the row's rank in the vector arm and in the text arm (None: that arm
    #: did not return it; both None: an episode brought in as a neighbour), and the episode
    #: whose neighbour share raised its score. ``score`` is then the fused score.
    vector_rank: int | None = None
    text_arm_rank: int | None = None
    expanded_from: UUID | None = None


#: A call's decisions are stored as one row of parallel arrays (``context_traces``): each
#: array column with the :class:`TraceDecision` field whose values it holds, in
#: order. Every statement that writes or rewrites a trace row takes its column list from here.
TRACE_ARRAYS: tuple[tuple[str, str], ...] = (
    ("ordinals", "ordinal"), ("fact_ids", "fact_id"), ("event_ids", "event_id"),
    ("actions", "action"), ("reasons", "reason_code"), ("ranks", "rank"),
    ("scores", "score"), ("similarities", "similarity"), ("text_ranks", "text_rank"),
    ("tokens", "tokens"), ("unconfirmed", "unconfirmed"),
    ("vector_ranks", "vector_rank"), ("text_arm_ranks", "text_arm_rank"),
    ("expanded_from", "expanded_from"),
)
TRACE_COLUMNS = ", ".join(column for column, _ in TRACE_ARRAYS)


#: Who gave a call's feedback: the agent (its model, after answering) or a person reviewing.
FeedbackSource = Literal["agent", "person"]
FeedbackVerdict = Literal["helpful", "unhelpful", "wrong"]


class CallFeedback(_Strict):
    """Feedback on a context call, one per source (``POST /v1/calls/{trace_id}/feedback``)."""

    source: FeedbackSource
    #: Ids of the facts and episodes (events) of the packet that the answer used.
    used: list[UUID]
    #: Ids of the subject's facts and events that the call should have served.
    missing: list[UUID]
    verdict: FeedbackVerdict | None
    note: str | None
    updated_at: datetime


class InspectResponse(_Strict):
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
    #: The call's feedback, one per source (agent first).
    feedback: list[CallFeedback] = Field(default_factory=list)


# --------------------------------------------------------------------------- memory document


class FactRecord(_Strict):
    """A fact to store. ``id`` is generated when absent; an existing id is updated (upsert)."""

    id: UUID | None = None
    project_id: Label = Field(min_length=1, max_length=SCOPE_MAX_CHARS)
    subject_id: Label = Field(min_length=1, max_length=SCOPE_MAX_CHARS)
    predicate: PredicateLabel = Field(min_length=1, max_length=256)
    value: Any
    qualifiers: dict[str, Any] = Field(default_factory=dict)
    status: FactStatus = "active"
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    volatility: Volatility = "stable"
    valid_from: Timestamp | None = None
    valid_to: Timestamp | None = None
    recorded_from: Timestamp | None = None
    last_reinforced_at: Timestamp | None = None
    supersedes_id: UUID | None = None
    source_event_ids: list[UUID] = Field(default_factory=list)
    version: int = Field(default=1, ge=1)
