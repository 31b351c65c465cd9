"""Requests and responses of ``GET /v1/calls`` and ``GET /v1/calls/{trace_id}``."""

from datetime import datetime
from typing import Literal
from uuid import UUID

from pydantic import Field, model_validator

from haki.memory.api import (
    DEFAULT_PAGE,
    Cursor,
    PageLimit,
    ScopeId,
    StorableText,
    _Body,
    _Scoped,
)
from haki.models import SCOPE_MAX_CHARS, EmptyReason, InspectResponse, Status, Timestamp

#: Longest search text: a query is at most 16,000 characters, a search a few words.
MAX_SEARCH_CHARS = 200
#: Longest warning or purpose to filter on.
MAX_LABEL_CHARS = 128


class CallListRequest(_Scoped):
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
    cursor: Cursor | None = None
    limit: PageLimit = DEFAULT_PAGE

    @model_validator(mode="after")
    def _window(self) -> "CallListRequest":
        if self.since and self.until and self.until <= self.since:
            raise ValueError("until must be later than since")
        return self


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
