"""Requests and responses of ``GET /v1/calls`` and ``GET /v1/calls/{trace_id}``."""

from datetime import datetime
from typing import Annotated, Literal, Self
from uuid import UUID

from pydantic import AfterValidator, Field, field_validator, model_validator

from haki.memory.api import (
    ScopeId,
    StorableText,
    _Body,
    _json_storable,
    _Paged,
    _Scoped,
)
from haki.models import (
    SCOPE_MAX_CHARS,
    EmptyReason,
    FeedbackSource,
    FeedbackVerdict,
    InspectResponse,
    Status,
    Timestamp,
)

#: Longest search text: a query is at most 16,000 characters, a search a few words.
MAX_SEARCH_CHARS = 200
#: Longest warning or purpose to filter on.
MAX_LABEL_CHARS = 128


class CallWindow(_Scoped):
    """A request over the calls made in a window of time."""

    #: Calls made at or after this instant.
    since: Timestamp | None = None
    #: Calls made before this instant.
    until: Timestamp | None = None

    @model_validator(mode="after")
    def _window(self) -> Self:
        if self.since and self.until and self.until <= self.since:
            raise ValueError("until must be later than since")
        return self


class CallListRequest(CallWindow, _Paged):
    #: One subject's calls only.
    subject_id: ScopeId | None = None
    #: Case-insensitive text the query or the subject id contains.
    q: StorableText | None = Field(default=None, min_length=1, max_length=MAX_SEARCH_CHARS)
    status: Status | None = None
    #: The code of a warning the packet carries (e.g. ``open_conflict``).
    warning: StorableText | None = Field(default=None, min_length=1, max_length=MAX_LABEL_CHARS)
    #: Why the packet was empty; ``served`` keeps the calls whose packet was not.
    empty_reason: EmptyReason | Literal["served"] | None = None
    purpose: StorableText | None = Field(default=None, min_length=1, max_length=MAX_LABEL_CHARS)
    #: Calls made at or after this instant.
    since: Timestamp | None = None
    #: Calls made before this instant.
    until: Timestamp | None = None
    #: Calls with feedback (``any``), or whose feedback names missing memory (``missing``).
    feedback: Literal["any", "missing"] | None = None


class CallSummary(_Body):
    """One context call as the listing shows it: what was asked and what was served, without
    the packet."""

    trace_id: UUID
    subject_id: str = Field(max_length=SCOPE_MAX_CHARS)
    query: str
    purpose: str | None
    budget_tokens: int
    token_count: int
    status: Status
    empty_reason: EmptyReason | None
    warnings: list[str]
    facts_served: int
    episodes_served: int
    candidates: int
    latency_ms: float
    created_at: datetime
    #: How many of the subject's facts and events its feedback says were missing (0: none
    #: reported, or no feedback).
    missing_reported: int


class CallPage(_Body):
    calls: list[CallSummary]
    #: Pass as ``cursor`` for the next (older) page; ``None`` on the last one.
    next_cursor: str | None


class Ranking(_Body):
    """How the service fuses its two retrieval arms, for drawing a fused score as its parts:
    each arm adds ``weight / (rrf_k + rank)``."""

    rrf_k: float
    rrf_weight_vector: float
    rrf_weight_text: float


class CallDetail(_Body):
    """One call: its packet and every decision (as ``GET /v1/inspect``), the current text of
    each candidate (absent once erased), and the packet as the ``<haki_memory>`` block."""

    trace: InspectResponse
    #: By fact or event id.
    texts: dict[str, str]
    rendered: str
    ranking: Ranking


#: Ids per list of a feedback (a packet serves far fewer).
MAX_FEEDBACK_IDS = 200
#: A feedback note is a short remark, not a transcript.
MAX_NOTE_CHARS = 1000


class FeedbackRequest(_Scoped):
    """``POST /v1/calls/{trace_id}/feedback``: what the answer to a call used, and what the
    call should have served. A repeat from the same ``source`` replaces the previous one."""

    #: The call's subject (the call is found in its exact scope, as inspect finds it).
    subject_id: ScopeId
    #: Fact and event ids the call served that the answer used.
    used: list[UUID] = Field(default_factory=list, max_length=MAX_FEEDBACK_IDS)
    #: Fact and event ids of the call's subject that should have been served.
    missing: list[UUID] = Field(default_factory=list, max_length=MAX_FEEDBACK_IDS)
    verdict: FeedbackVerdict | None = None
    #: Tenant content: stored and shown to the tenant, never logged.
    note: Annotated[str, Field(min_length=1, max_length=MAX_NOTE_CHARS),
                    AfterValidator(_json_storable)] | None = None
    source: FeedbackSource = "agent"

    @field_validator("used", "missing")
    @classmethod
    def _once_each(cls, ids: list[UUID]) -> list[UUID]:
        """An id given twice counts once; the order given is kept."""
        return list(dict.fromkeys(ids))

    @model_validator(mode="after")
    def _used_or_missing(self) -> "FeedbackRequest":
        both = set(self.used) & set(self.missing)
        if both:
            raise ValueError(f"ids both used and missing: {sorted(map(str, both))}")
        return self
