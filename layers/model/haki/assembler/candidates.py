"""Rows of the retrieval queries, as typed values the packer works on."""

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from haki.text import event_text, fact_text


@dataclass(frozen=True, slots=True)
class FactCandidate:
    """A fact that came up in phase 1 (or multi-hop), with its phase-2 score components."""

    id: UUID
    predicate: str
    value: Any
    confidence: float | None
    valid_from: datetime | None
    source_event_ids: list[UUID]
    volatility: str
    distance: float
    text_rank: float
    recency: float
    conflict_open: bool
    horizon_passed: bool
    score: float

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "FactCandidate":
        return cls(**{name: row[name] for name in cls.__slots__})

    @property
    def similarity(self) -> float:
        return 1.0 - self.distance

    @property
    def text(self) -> str:
        return fact_text(self.predicate, self.value)


@dataclass(frozen=True, slots=True)
class EpisodeCandidate:
    """One of the nearest events of the scope."""

    id: UUID
    kind: str
    payload: dict[str, Any]
    occurred_at: datetime
    distance: float

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "EpisodeCandidate":
        return cls(**{name: row[name] for name in cls.__slots__})

    @property
    def similarity(self) -> float:
        return 1.0 - self.distance

    def excerpt(self, max_chars: int) -> str:
        return event_text(self.kind, self.payload)[:max_chars]
