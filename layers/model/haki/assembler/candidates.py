"""Rows of the retrieval queries, as typed values the packer works on."""

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from haki.text import event_body, fact_text, speaker


@dataclass(frozen=True, slots=True)
class FactCandidate:
    """A fact that came up as a candidate: its cosine ``distance`` to the question and
    ``text_rank``, the text arm's idf score (None: not matched). Its score is the fusion's
    (``fusion.py``)."""

    id: UUID
    predicate: str
    value: Any
    confidence: float | None
    valid_from: datetime | None
    source_event_ids: list[UUID]
    volatility: str
    distance: float
    text_rank: float | None
    conflict_open: bool
    horizon_passed: bool

    @classmethod
    def from_row(cls, row: dict[str, Any], *, distance: float | None = None
                 ) -> "FactCandidate":
        """A row of a candidates statement (``distance`` where the row lacks it;
        ``text_rank`` None when it has none)."""
        return cls(
            id=row["id"], predicate=row["predicate"], value=row["value"],
            confidence=row["confidence"], valid_from=row["valid_from"],
            source_event_ids=row["source_event_ids"], volatility=row["volatility"],
            distance=row["distance"] if distance is None else distance,
            text_rank=row.get("text_rank"), conflict_open=row["conflict_open"],
            horizon_passed=row["horizon_passed"])

    @property
    def similarity(self) -> float:
        return 1.0 - self.distance

    @property
    def text(self) -> str:
        return fact_text(self.predicate, self.value)


@dataclass(frozen=True, slots=True)
class EpisodeCandidate:
    """An event that came up as a candidate (or as the neighbour of one)."""

    id: UUID
    kind: str
    payload: dict[str, Any]
    occurred_at: datetime
    distance: float
    #: The event's thread (None: none) and its place in the order events were written
    #: (``events.seq``): the messages of one batch share a time but not a place.
    thread_id: str | None = None
    seq: int = 0

    @classmethod
    def from_row(cls, row: dict[str, Any], *, distance: float | None = None
                 ) -> "EpisodeCandidate":
        """A row of a candidates statement (``distance`` where the row lacks it)."""
        values: dict[str, Any] = {name: row.get(name) for name in cls.__slots__}
        if distance is not None:
            values["distance"] = distance
        values["seq"] = values["seq"] or 0
        return cls(**values)

    @property
    def similarity(self) -> float:
        return 1.0 - self.distance

    def text(self, *, with_kind: bool = True) -> str:
        """What an excerpt is cut from: ``kind: body`` or the body alone."""
        body = event_body(self.payload)
        return f"{self.kind}: {body}" if with_kind else body

    @property
    def speaker(self) -> tuple[str | None, str | None]:
        """A message's role and name (``haki.text.speaker``)."""
        return speaker(self.payload)


@dataclass(frozen=True, slots=True)
class Ranked:
    """A fused candidate: the fact or episode, where each arm ranked it (None: the arm did
    not return it), and its fused score. ``expanded_from`` names the episode whose neighbour
    share raised the score, if any; a row with no arm rank came in as a neighbour only."""

    item: FactCandidate | EpisodeCandidate
    vector_rank: int | None
    text_arm_rank: int | None
    score: float
    expanded_from: UUID | None = None

    @property
    def id(self) -> UUID:
        return self.item.id

    @property
    def neighbour_only(self) -> bool:
        return self.vector_rank is None and self.text_arm_rank is None
