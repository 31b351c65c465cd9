"""``haki load``, the demo and ``haki eval``: store a whole memory document as written.

A document is written in ONE transaction: embeddings are computed first (outside any
transaction), then every row goes in, and either all of it is visible or none. It goes through
the write API's own statements and embedding batches (``haki.memory.events``, ``.facts``,
``.conflicts``, ``.store``) but not through its rules: ids, statuses, versions and conflict
sets are stored as the document gives them (an id already stored is updated), and a resolved
set is resolved by the same :func:`resolve_conflict` as ``POST /v1/conflicts/{id}/resolve``.
Row-level security holds throughout: the transaction's scope is set for each project before its
rows are written. The admin tools write as the owner (any project); the runtime role cannot
load a document (it may not change a stored event, so not upsert one: docs/security.md).
"""

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import TypeVar

import numpy as np

from haki.db import Database
from haki.db.connection import set_scope
from haki.embedding import Embedder
from haki.errors import ValidationFailed
from haki.memory.conflicts import INSERT_CONFLICT, resolve_conflict
from haki.memory.events import UPSERT_EVENT, event_row
from haki.memory.facts import UPSERT_FACT, fact_row
from haki.memory.store import Progress, embed_texts, write_transaction
from haki.models import FactRecord
from haki.text import event_text, fact_text
from haki_local.documents import ConflictRecord, EventRecord, MemoryDocument

__all__ = ["LoadSummary", "MemoryWriter"]

log = logging.getLogger(__name__)

R = TypeVar("R", FactRecord, EventRecord)


@dataclass(frozen=True)
class LoadSummary:
    facts: int
    events: int
    conflicts_opened: int
    conflicts_resolved: int


class MemoryWriter:
    """Writes memory documents through ``db`` (runtime or owner role)."""

    def __init__(self, db: Database, embedder: Embedder) -> None:
        self._db = db
        self._embedder = embedder

    @staticmethod
    def steps(document: MemoryDocument) -> int:
        """How many units :meth:`write` reports to its ``progress`` for ``document``."""
        return 2 * (len(document.facts) + len(document.events)) + len(document.conflicts)

    def write(self, document: MemoryDocument, progress: Progress | None = None) -> LoadSummary:
        """Store a whole document atomically; ids are generated where absent. ``progress`` is
        told each step done (:meth:`steps` in all)."""
        tick = progress or (lambda _n: None)
        facts = [f if f.id else f.model_copy(update={"id": uuid.uuid4()})
                 for f in document.facts]
        events = [e if e.id else e.model_copy(update={"id": uuid.uuid4()})
                  for e in document.events]
        conflicts = [c if c.id else c.model_copy(update={"id": uuid.uuid4()})
                     for c in document.conflicts]
        _check_conflicts(conflicts)
        fact_vectors = embed_texts(
            self._embedder, [fact_text(f.predicate, f.value) for f in facts], tick)
        event_vectors = embed_texts(
            self._embedder, [event_text(e.kind, e.payload) for e in events], tick)

        resolved = 0
        with write_transaction(self._db, None) as conn:
            for project, event_rows in _by_project(events, event_vectors):
                set_scope(conn, project)
                rows = []
                for e, v in event_rows:
                    assert e.id is not None  # every event was given an id above
                    rows.append(event_row(
                        id=e.id, project_id=e.project_id, subject_id=e.subject_id,
                        thread_id=e.thread_id, kind=e.kind, payload=e.payload,
                        occurred_at=e.occurred_at, idempotency_key=None, embedding=v))
                conn.cursor().executemany(UPSERT_EVENT, rows)
                tick(len(event_rows))
            for project, fact_rows in _by_project(facts, fact_vectors):
                set_scope(conn, project)
                conn.cursor().executemany(UPSERT_FACT, [fact_row(f, v) for f, v in fact_rows])
                tick(len(fact_rows))
            for conflict in conflicts:
                set_scope(conn, conflict.project_id)
                conn.execute(INSERT_CONFLICT, {
                    "id": conflict.id, "project_id": conflict.project_id,
                    "subject_id": conflict.subject_id, "fact_ids": conflict.fact_ids,
                    "reason": conflict.reason})
                if conflict.status == "resolved":
                    assert conflict.id is not None and conflict.keep_fact_id is not None
                    resolve_conflict(conn, conflict.project_id, conflict.id,
                                     conflict.keep_fact_id)
                    resolved += 1
                tick(1)
        summary = LoadSummary(len(facts), len(events), len(conflicts) - resolved, resolved)
        log.info("stored %s", summary)
        return summary


def _check_conflicts(conflicts: list[ConflictRecord]) -> None:
    for index, conflict in enumerate(conflicts):
        if conflict.status == "resolved" and conflict.keep_fact_id not in conflict.fact_ids:
            raise ValidationFailed(
                f"conflicts[{index}]: field 'keep_fact_id': a resolved conflict must name the "
                "fact it keeps, one of its fact_ids")


def _by_project(
    records: Sequence[R], vectors: np.ndarray
) -> list[tuple[str, list[tuple[R, np.ndarray]]]]:
    """Records with their vectors, grouped by project (one scope switch per project)."""
    pairs = sorted(zip(records, vectors, strict=True), key=lambda pair: pair[0].project_id)
    return [(project, list(group))
            for project, group in groupby(pairs, key=lambda pair: pair[0].project_id)]
