"""Requests and responses of the memory write API (SPEC §11), and its documented limits.

A handler validates the body (or query) into one of the request models, calls one core function
with the key's project, and returns the response model. Validation here covers what can be
checked on the record alone (types, lengths, JSON that PostgreSQL can store); what needs the
database (references, the rules per subject and predicate) is the core's, and limits measured
in bytes raise ``payload_too_large`` (413) there.
"""

import json
import math
from datetime import datetime
from typing import Annotated, Any, Literal, Self
from uuid import UUID

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    model_validator,
)

from haki.errors import ForbiddenScope
from haki.models import (
    IDENTIFIER,
    PREDICATE,
    SCOPE_MAX_CHARS,
    SCOPE_PATTERN,
    FactStatus,
    StoredConfidence,
    Timestamp,
    Volatility,
)
from haki.text import MessageRole, value_text

# --------------------------------------------------------------------------- limits
#: Records per ``POST /v1/events`` or ``POST /v1/facts`` (422 beyond).
MAX_BATCH = 100
#: Model tokens one batch may embed, all records together (413 beyond, naming the first record
#: past it). Each text counts what the model reads of it: at most its 512-token window, prefix
#: included; a longer text is truncated there (stored whole, embedded on its first ~2,000
#: characters). Embedding is the cost of a write, about linear in tokens (docs/benchmarks.md,
#: "Ingest benchmark"): this bound keeps the worst batch on one vCPU well inside API
#: Gateway's 29 s integration timeout. 100 short messages (~30 tokens each)
#: use a fifth of it; 32 messages of 2,000 characters fill it.
MAX_EMBED_TOKENS = 16_384
#: One event's ``payload`` as compact UTF-8 JSON, in bytes (413 beyond).
MAX_EVENT_PAYLOAD_BYTES = 16_384
#: A fact's value as the text that is embedded and served (``haki.text.value_text``) (422).
MAX_FACT_VALUE_CHARS = 2_000
MAX_PREDICATE_CHARS = 256
MAX_KIND_CHARS = 128
MAX_IDEMPOTENCY_KEY_CHARS = 128
#: A message's speaker name and client message id.
MAX_SPEAKER_NAME_CHARS = 128
MAX_MESSAGE_ID_CHARS = 128
MAX_SOURCE_EVENT_IDS = 100
#: Rows per page of the listings; the default when ``limit`` is absent.
MAX_PAGE = 200
DEFAULT_PAGE = 50
#: An opaque cursor is short; anything longer is not one of ours.
MAX_CURSOR_CHARS = 200
#: Nesting of a payload or value (objects and arrays within each other) (422 beyond).
MAX_JSON_DEPTH = 32


def _json_storable(value: Any) -> Any:
    """``value`` if PostgreSQL's jsonb can hold it exactly: JSON types only, finite numbers,
    strings without NUL (jsonb refuses ``\\u0000``) and without lone surrogates (not UTF-8),
    nested at most :data:`MAX_JSON_DEPTH` deep."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise ValueError(f"nested more than {MAX_JSON_DEPTH} levels deep")
        if isinstance(item, str):
            _storable_text(item)
        elif isinstance(item, bool) or item is None or isinstance(item, int):
            continue
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise ValueError("numbers must be finite (no NaN or Infinity)")
        elif isinstance(item, list):
            stack.extend((inner, depth + 1) for inner in item)
        elif isinstance(item, dict):
            _storable_keys(item)
            stack.extend((inner, depth + 1) for inner in item.values())
        else:
            raise ValueError(f"not a JSON value ({type(item).__name__})")
    return value


def _storable_keys(item: dict[Any, Any]) -> None:
    for key in item:
        if not isinstance(key, str):
            raise ValueError("object keys must be strings")
        _storable_text(key)


def _storable_text(text: str) -> None:
    if "\x00" in text:
        raise ValueError("text must not contain NUL characters")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError("text must be valid Unicode (no lone surrogates)") from exc


def _storable_str(text: str) -> str:
    _storable_text(text)
    return text


#: Free text compared with stored text (a search, a filter): any text PostgreSQL can hold.
StorableText = Annotated[str, AfterValidator(_storable_str)]
def _label(max_chars: int) -> StringConstraints:
    """The bounds and shape of a label of at most ``max_chars`` characters."""
    return StringConstraints(min_length=1, max_length=max_chars, pattern=SCOPE_PATTERN)


ScopeId = Annotated[str, _label(SCOPE_MAX_CHARS), IDENTIFIER]
Predicate = Annotated[str, _label(MAX_PREDICATE_CHARS), PREDICATE]
JsonObject = Annotated[dict[str, Any], AfterValidator(_json_storable)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Scoped(_Body):
    """A request that may name its project; the core serves it only with that project's key
    (absent: the key's project, as a key is bound to one)."""

    project_id: ScopeId | None = None


def check_scope(project_id: str, request: _Scoped) -> None:
    """Refuse a request that names another project than the key's (the handlers check it
    first; the core does not rely on them). One that names none is the key's."""
    if request.project_id is not None and request.project_id != project_id:
        raise ForbiddenScope("this API key is not valid for the requested project")


def payload_bytes(payload: dict[str, Any]) -> int:
    """An event payload's size as compact UTF-8 JSON (what :data:`MAX_EVENT_PAYLOAD_BYTES`
    bounds)."""
    return len(json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


# --------------------------------------------------------------------------- POST /v1/events


class EventIn(_Body):
    """An episode to store. ``id`` or ``idempotency_key`` (at most one) makes its delivery
    idempotent: a replay returns the original id and writes nothing."""

    subject_id: ScopeId
    #: The conversation thread of the subject the event belongs to (optional).
    thread_id: ScopeId | None = None
    kind: Annotated[str, _label(MAX_KIND_CHARS), IDENTIFIER]
    occurred_at: Timestamp | None = None
    payload: JsonObject = Field(default_factory=dict)
    id: UUID | None = None
    idempotency_key: Annotated[str, _label(MAX_IDEMPOTENCY_KEY_CHARS), IDENTIFIER] | None = None

    @model_validator(mode="after")
    def _one_idempotency_handle(self) -> Self:
        if self.id is not None and self.idempotency_key is not None:
            raise ValueError("give either id or idempotency_key, not both")
        return self


#: The kind of the event a message is stored as.
MESSAGE_KIND = "conversation.message"


class MessageIn(_Body):
    """A message of a conversation, stored as a ``conversation.message`` event whose payload
    is ``{"role", "name" (when given), "text"}``. Idempotent per message: its event id is
    ``id`` when given, else derived from the subject and ``message_id``, else from the subject,
    the speaker, the content and ``occurred_at``; one of the three is required, so that a
    retried call never stores a message twice."""

    role: MessageRole
    content: Annotated[str, Field(min_length=1), AfterValidator(_json_storable)]
    #: The speaker's name (``Ana``, a tool's name), shown beside the role.
    name: Annotated[str, _label(MAX_SPEAKER_NAME_CHARS), IDENTIFIER] | None = None
    occurred_at: Timestamp | None = None
    id: UUID | None = None
    #: The client's own id of the message (unique within the subject).
    message_id: Annotated[str, _label(MAX_MESSAGE_ID_CHARS), IDENTIFIER] | None = None

    @model_validator(mode="after")
    def _identified(self) -> Self:
        if self.id is not None and self.message_id is not None:
            raise ValueError("give either id or message_id, not both")
        if self.id is None and self.message_id is None and self.occurred_at is None:
            raise ValueError(
                "a message needs id, message_id or occurred_at, so that a retry is "
                "recognised")
        return self

    def payload(self) -> dict[str, Any]:
        """The stored payload: the speaker and the text."""
        speaker = {"role": self.role} | ({"name": self.name} if self.name else {})
        return speaker | {"text": self.content}


class EventsRequest(_Scoped):
    """A batch of ``events``, or of ``messages`` of one ``subject_id`` (a turn or a whole
    conversation, optionally of one ``thread_id``): one of the two lists. The messages of a
    batch are said in the order listed."""

    events: list[EventIn] | None = Field(default=None, min_length=1, max_length=MAX_BATCH)
    #: The subject of ``messages`` (each event names its own).
    subject_id: ScopeId | None = None
    #: The thread of ``messages`` (each event names its own).
    thread_id: ScopeId | None = None
    messages: list[MessageIn] | None = Field(default=None, min_length=1, max_length=MAX_BATCH)

    @model_validator(mode="after")
    def _one_list(self) -> Self:
        if (self.events is None) == (self.messages is None):
            raise ValueError("give either events or messages (with subject_id)")
        if self.events is not None and self.subject_id is not None:
            raise ValueError("subject_id goes with messages; each event names its own")
        if self.events is not None and self.thread_id is not None:
            raise ValueError("thread_id goes with messages; each event names its own")
        return self

    def subjects(self) -> set[str]:
        """The subjects the batch writes."""
        if self.events is not None:
            return {e.subject_id for e in self.events}
        return {self.subject_id} if self.subject_id is not None else set()


class EventWritten(_Body):
    id: UUID
    #: True when the event had been stored before (same id or idempotency key): nothing new
    #: was written.
    deduplicated: bool


class EventsResponse(_Body):
    #: One entry per event or message of the request, in its order.
    events: list[EventWritten]


# --------------------------------------------------------------------------- POST /v1/facts


def _fact_value(value: Any) -> Any:
    _json_storable(value)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise ValueError("a fact needs a value")
    if len(value_text(value)) > MAX_FACT_VALUE_CHARS:
        raise ValueError(f"the value is longer than {MAX_FACT_VALUE_CHARS} characters as text")
    return value


class FactIn(_Body):
    subject_id: ScopeId
    predicate: Predicate
    value: Annotated[Any, AfterValidator(_fact_value)]
    confidence: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    volatility: Volatility = "stable"
    valid_from: Timestamp | None = None
    valid_to: Timestamp | None = None
    source_event_ids: list[UUID] = Field(default_factory=list, max_length=MAX_SOURCE_EVENT_IDS)
    #: ``candidate`` facts are stored but not served, and never contradict the active fact.
    status: Literal["candidate", "active"] = "active"
    #: The active fact of this subject and predicate that this one replaces.
    supersedes_id: UUID | None = None

    @model_validator(mode="after")
    def _coherent(self) -> Self:
        if self.valid_from and self.valid_to and self.valid_to <= self.valid_from:
            raise ValueError("valid_to must be later than valid_from")
        if self.supersedes_id is not None and self.status != "active":
            raise ValueError("a fact that supersedes another must be active")
        return self


class FactsRequest(_Scoped):
    facts: list[FactIn] = Field(min_length=1, max_length=MAX_BATCH)


#: What writing one fact did (per subject and predicate, SPEC §11).
FactOutcome = Literal["created", "reinforced", "superseded", "conflict"]


class FactWritten(_Body):
    #: The new fact; for ``reinforced``, the active fact that was reinforced.
    id: UUID
    outcome: FactOutcome
    status: FactStatus
    version: int
    #: ``superseded``: the fact this one replaced.
    supersedes_id: UUID | None = None
    #: ``conflict``: the open conflict set now holding this fact and the one it contradicts.
    conflict_id: UUID | None = None


class FactsResponse(_Body):
    #: One entry per fact of the request, in its order.
    facts: list[FactWritten]


# --------------------------------------------------------------------------- GET /v1/facts

#: Lax: a query string gives "50".
PageLimit = Annotated[int, Field(ge=1, le=MAX_PAGE)]
Cursor = Annotated[str, Field(min_length=1, max_length=MAX_CURSOR_CHARS)]


class _Paged(_Scoped):
    """A request for one page of a listing: the cursor of the page before (none: the first),
    the page's size, and the listing's filters (its other fields)."""

    cursor: Cursor | None = None
    limit: PageLimit = DEFAULT_PAGE

    def filters(self) -> dict[str, Any]:
        """The filters, by name: every field but the scope and the page."""
        return self.model_dump(exclude={"project_id", "cursor", "limit"})


class FactListRequest(_Paged):
    subject_id: ScopeId
    status: FactStatus = "active"
    predicate: Predicate | None = None


class FactView(_Body):
    id: UUID
    subject_id: str
    predicate: str
    value: Any
    qualifiers: dict[str, Any]
    status: FactStatus
    confidence: StoredConfidence
    volatility: Volatility
    valid_from: datetime | None
    valid_to: datetime | None
    recorded_from: datetime
    recorded_to: datetime | None
    last_reinforced_at: datetime | None
    supersedes_id: UUID | None
    source_event_ids: list[UUID]
    version: int


class FactPage(_Body):
    facts: list[FactView]
    #: Pass as ``cursor`` for the next page; ``None`` on the last one.
    next_cursor: str | None


# ------------------------------------------------------------- POST /v1/facts/{id}/status


class FactStatusRequest(_Scoped):
    status: FactStatus


class FactStatusResponse(_Body):
    fact: FactView
    #: Activating a fact next to an active fact of another value opens (or extends) a set.
    conflict_id: UUID | None = None


# --------------------------------------------------------------------------- conflicts


class ConflictListRequest(_Paged):
    subject_id: ScopeId
    status: Literal["open", "resolved"] = "open"


class ConflictFact(_Body):
    id: UUID
    predicate: str
    value: Any
    status: FactStatus


class ConflictView(_Body):
    id: UUID
    subject_id: str
    status: Literal["open", "resolved"]
    reason: str | None
    created_at: datetime
    resolved_at: datetime | None
    #: The facts of the set, in the set's order.
    facts: list[ConflictFact]


class ConflictPage(_Body):
    conflicts: list[ConflictView]
    next_cursor: str | None


class ResolveRequest(_Scoped):
    keep_fact_id: UUID


class ResolveResponse(_Body):
    conflict_id: UUID
    kept_fact_id: UUID
    #: The other facts of the set that became superseded (facts already superseded, disabled
    #: or deleted keep their status).
    superseded_fact_ids: list[UUID]
    resolved_at: datetime


# --------------------------------------------------------------------------- POST /v1/forget


class ForgetRequest(_Scoped):
    """Forget one subject or one fact: ``disable`` stops serving it (reversible), ``enable``
    serves it again, ``delete`` erases the rows (right to erasure) and returns a receipt."""

    subject_id: ScopeId | None = None
    fact_id: UUID | None = None
    mode: Literal["disable", "enable", "delete"]

    @model_validator(mode="after")
    def _one_target(self) -> Self:
        if (self.subject_id is None) == (self.fact_id is None):
            raise ValueError("give exactly one of subject_id and fact_id")
        return self


class ForgetResponse(_Body):
    #: The stored erasure receipt (``delete`` only).
    receipt_id: UUID | None
    target: Literal["subject", "fact"]
    mode: Literal["disable", "enable", "delete"]
    #: Rows affected per table: ``disable`` → ``{"facts": n}`` (facts disabled); ``enable`` →
    #: ``{"facts": n}`` (disabled facts made active again); ``delete`` →
    #: rows erased per table, plus ``conflict_sets_updated`` (sets that lost an erased fact)
    #: and ``context_calls_redacted`` (past packets the erased fact was removed from).
    counts: dict[str, int]
    forgotten_at: datetime
