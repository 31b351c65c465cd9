"""Facts: ``POST /v1/facts`` with its rules per (subject, predicate), ``GET /v1/facts``,
``POST /v1/facts/{id}/status``, and the statements ``haki load`` shares with them.

The rules of a write, per (subject, predicate), against its **active** facts (SPEC §11):

- the value equals an active fact's value → that fact is **reinforced**
  (``last_reinforced_at``, ``version`` + 1, the new ``source_event_ids`` added), no new row;
- ``supersedes_id`` names an active fact of the key → it becomes ``superseded`` and the new
  fact is stored active (**superseded**); naming a fact that is not active for this subject
  and predicate is ``stale_supersedes``, one of an open conflict set ``fact_in_open_conflict``;
- an active value, different from every active fact's, without ``supersedes_id`` → both are
  kept and an open conflict set holds them (**conflict**), so ``/v1/context`` serves neither
  and warns until the set is resolved;
- otherwise (no active fact, or a ``candidate``, which is not served and contradicts nothing)
  the fact is stored (**created**).

Activating a fact through its status follows the third rule too: next to an active fact of
another value it opens a conflict set; a fact leaving ``active`` leaves its open sets
(``haki.memory.conflicts``). Writers of one key are serialised by its advisory lock
(``haki.memory.store``), and a batch is one transaction: one bad record, nothing written.
"""

import logging
import uuid
from typing import Any
from uuid import UUID

import numpy as np
import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from haki.db import Database
from haki.embedding import Embedder
from haki.errors import (
    FactInOpenConflict,
    FactNotFound,
    StaleSupersedes,
    UnknownReference,
)
from haki.memory.api import (
    FactIn,
    FactListRequest,
    FactPage,
    FactsRequest,
    FactsResponse,
    FactStatusRequest,
    FactStatusResponse,
    FactView,
    FactWritten,
    check_scope,
)
from haki.memory.conflicts import leave_open_sets, open_conflict
from haki.memory.lifecycle import check_transition, set_subject_disabled, transition
from haki.memory.pagination import read_page
from haki.memory.quota import StorageQuota, check_storage_quota
from haki.memory.store import (
    check_embedding_budget,
    embed_texts,
    lock_scopes,
    write_transaction,
)
from haki.models import FactRecord, FactStatus
from haki.text import fact_text

log = logging.getLogger(__name__)

INSERT_FACT = """
INSERT INTO facts (
    id, project_id, subject_id, predicate, value, qualifiers, status, confidence, volatility,
    valid_from, valid_to, recorded_from, last_reinforced_at, supersedes_id, source_event_ids,
    version, embedding)
VALUES (
    %(id)s, %(project_id)s, %(subject_id)s, %(predicate)s, %(value)s, %(qualifiers)s,
    %(status)s, %(confidence)s, %(volatility)s, %(valid_from)s, %(valid_to)s,
    coalesce(%(recorded_from)s, now()), %(last_reinforced_at)s, %(supersedes_id)s,
    %(source_event_ids)s, %(version)s, %(embedding)s)
"""

#: ``haki load``: an id already stored in the same scope is updated with the document's values
#: (statuses, versions and links as given: a document is loaded as written, without the rules).
UPSERT_FACT = INSERT_FACT + """
ON CONFLICT (project_id, id) DO UPDATE SET
    predicate = EXCLUDED.predicate, value = EXCLUDED.value, qualifiers = EXCLUDED.qualifiers,
    status = EXCLUDED.status, confidence = EXCLUDED.confidence,
    volatility = EXCLUDED.volatility, valid_from = EXCLUDED.valid_from,
    valid_to = EXCLUDED.valid_to, last_reinforced_at = EXCLUDED.last_reinforced_at,
    supersedes_id = EXCLUDED.supersedes_id, source_event_ids = EXCLUDED.source_event_ids,
    version = EXCLUDED.version, embedding = EXCLUDED.embedding
WHERE facts.project_id = EXCLUDED.project_id AND facts.subject_id = EXCLUDED.subject_id
"""

#: The active facts of one key, locked, newest first, each with the open set holding it
#: (facts_scope_idx, then the predicate; conflict_sets_open_idx).
SELECT_ACTIVE = """
SELECT f.id, f.version, f.source_event_ids, f.value = %(value)s AS same_value,
       (SELECT c.id FROM conflict_sets AS c
        WHERE c.project_id = f.project_id AND c.subject_id = f.subject_id
          AND c.status = 'open' AND f.id = ANY (c.fact_ids)
        ORDER BY c.created_at DESC
        LIMIT 1) AS open_conflict_id
FROM facts AS f
WHERE f.project_id = %(project_id)s AND f.subject_id = %(subject_id)s
  AND f.status = 'active' AND f.predicate = %(predicate)s
ORDER BY f.recorded_from DESC, f.id
FOR UPDATE OF f
"""

REINFORCE = """
UPDATE facts
SET last_reinforced_at = now(), version = version + 1, source_event_ids = %(source_event_ids)s
WHERE project_id = %(project_id)s AND id = %(id)s
RETURNING version
"""

#: The events of a batch's ``source_event_ids`` that exist in the project (primary key). They
#: cannot vanish before COMMIT: erasing their subject waits for the subject lock the writer holds.
SELECT_SOURCES = """
SELECT id, subject_id FROM events WHERE project_id = %(project_id)s AND id = ANY (%(ids)s)
"""

_VIEW_COLUMNS = """
    id, subject_id, predicate, value, qualifiers, status, confidence, volatility, valid_from,
    valid_to, recorded_from, recorded_to, last_reinforced_at, supersedes_id, source_event_ids,
    version
"""

#: One fact by id (primary key).
SELECT_FACT = f"""
SELECT {_VIEW_COLUMNS}
FROM facts
WHERE project_id = %(project_id)s AND id = %(id)s
"""
SELECT_FACT_FOR_UPDATE = SELECT_FACT + "FOR UPDATE"

#: ``GET /v1/facts``: one scope's facts of one status (facts_scope_idx), optionally of one
#: predicate, in (recorded_from, id) order after the cursor — a subject's facts of one status
#: are few enough to sort after the index scan.
LIST_FACTS = f"""
SELECT {_VIEW_COLUMNS}
FROM facts
WHERE project_id = %(project_id)s AND subject_id = %(subject_id)s AND status = %(status)s
  AND (%(predicate)s::text IS NULL OR predicate = %(predicate)s)
  AND (%(after_at)s::timestamptz IS NULL OR (recorded_from, id) > (%(after_at)s, %(after_id)s))
ORDER BY recorded_from, id
LIMIT %(limit)s
"""


def fact_row(fact: FactRecord, embedding: np.ndarray) -> dict[str, object]:
    """Parameters of :data:`INSERT_FACT` / :data:`UPSERT_FACT`."""
    return {
        **fact.model_dump(),
        "value": Jsonb(fact.value),
        "qualifiers": Jsonb(fact.qualifiers),
        "embedding": embedding,
    }


def write_facts(
    db: Database, embedder: Embedder, project_id: str, request: FactsRequest,
    quota: StorageQuota | None = None,
) -> FactsResponse:
    """``POST /v1/facts``: apply the rules to each fact in order, in one transaction (a later
    fact of the batch sees what an earlier one did). Past the project's storage ``quota``
    (default: the settings') it raises :class:`StorageQuotaExceeded` and writes nothing."""
    check_scope(project_id, request)
    facts = request.facts
    texts = [fact_text(f.predicate, f.value) for f in facts]
    check_embedding_budget(embedder, texts, "facts")
    vectors = embed_texts(embedder, texts)
    with write_transaction(db, project_id) as conn:
        lock_scopes(conn, project_id, {f.subject_id for f in facts},
                    {(f.subject_id, f.predicate) for f in facts})
        _check_sources(conn, project_id, facts)
        written = [_write_one(conn, project_id, index, fact, vector)
                   for index, (fact, vector) in enumerate(zip(facts, vectors, strict=True))]
        check_storage_quota(conn, project_id, quota,
                            facts_added=sum(w.outcome != "reinforced" for w in written))
    log.info("facts written: %s", {o: sum(w.outcome == o for w in written)
                                   for o in sorted({w.outcome for w in written})})
    return FactsResponse(facts=written)


def _check_sources(conn: psycopg.Connection, project_id: str, facts: list[FactIn]) -> None:
    """Every ``source_event_ids`` entry is an event of the fact's own scope; another subject's
    or another project's event is the same unknown reference."""
    wanted = list({i for fact in facts for i in fact.source_event_ids})
    if not wanted:
        return
    subject_of: dict[UUID, str] = dict(conn.execute(
        SELECT_SOURCES, {"project_id": project_id, "ids": wanted}).fetchall())
    for index, fact in enumerate(facts):
        for position, event_id in enumerate(fact.source_event_ids):
            if subject_of.get(event_id) != fact.subject_id:
                raise UnknownReference(
                    f"facts[{index}]: field 'source_event_ids.{position}': no event {event_id} "
                    "for this subject")


def _write_one(
    conn: psycopg.Connection, project_id: str, index: int, fact: FactIn, vector: np.ndarray
) -> FactWritten:
    key = {"project_id": project_id, "subject_id": fact.subject_id,
           "predicate": fact.predicate, "value": Jsonb(fact.value)}
    active = conn.cursor(row_factory=dict_row).execute(SELECT_ACTIVE, key).fetchall()
    if fact.supersedes_id is not None:
        old = _supersede_target(conn, project_id, index, fact, active)
        if old["same_value"]:
            return _reinforce(conn, project_id, old, fact)
        transition(conn, project_id, [old["id"]], "superseded")
        new_id = _insert(conn, project_id, fact, vector)
        return FactWritten(id=new_id, outcome="superseded", status="active", version=1,
                           supersedes_id=old["id"])
    same = next((row for row in active if row["same_value"]), None)
    if same is not None:
        return _reinforce(conn, project_id, same, fact)
    new_id = _insert(conn, project_id, fact, vector)
    if not active or fact.status == "candidate":
        return FactWritten(id=new_id, outcome="created", status=fact.status, version=1)
    conflict_id = open_conflict(
        conn, project_id, fact.subject_id, [*(row["id"] for row in active), new_id])
    return FactWritten(id=new_id, outcome="conflict", status="active", version=1,
                       conflict_id=conflict_id)


def _supersede_target(
    conn: psycopg.Connection, project_id: str, index: int, fact: FactIn,
    active: list[dict[str, Any]],
) -> dict[str, Any]:
    """The active fact ``supersedes_id`` names, or why it cannot be superseded."""
    old = next((row for row in active if row["id"] == fact.supersedes_id), None)
    where = f"facts[{index}]: field 'supersedes_id'"
    if old is None:
        exists = conn.execute(SELECT_FACT, {"project_id": project_id,
                                            "id": fact.supersedes_id}).fetchone()
        if exists is None:
            raise UnknownReference(f"{where}: no fact {fact.supersedes_id} in this project")
        raise StaleSupersedes(
            f"{where}: fact {fact.supersedes_id} is not an active fact of this subject and "
            "predicate (it may have been superseded already); read the active fact and retry")
    if old["open_conflict_id"] is not None:
        raise FactInOpenConflict(
            f"{where}: fact {fact.supersedes_id} is in open conflict set "
            f"{old['open_conflict_id']}; resolve the set first")
    return old


def _reinforce(
    conn: psycopg.Connection, project_id: str, row: dict[str, Any], fact: FactIn
) -> FactWritten:
    sources = list(dict.fromkeys([*row["source_event_ids"], *fact.source_event_ids]))
    version = conn.execute(REINFORCE, {"project_id": project_id, "id": row["id"],
                                       "source_event_ids": sources}).fetchone()
    assert version is not None
    return FactWritten(id=row["id"], outcome="reinforced", status="active", version=version[0])


def _insert(
    conn: psycopg.Connection, project_id: str, fact: FactIn, vector: np.ndarray
) -> UUID:
    record = FactRecord(
        id=uuid.uuid4(), project_id=project_id, subject_id=fact.subject_id,
        predicate=fact.predicate, value=fact.value, status=fact.status,
        confidence=fact.confidence, volatility=fact.volatility, valid_from=fact.valid_from,
        valid_to=fact.valid_to, supersedes_id=fact.supersedes_id,
        source_event_ids=fact.source_event_ids)
    conn.execute(INSERT_FACT, fact_row(record, vector))
    assert record.id is not None
    return record.id


def change_status(
    conn: psycopg.Connection, project_id: str, fact_id: UUID, target: FactStatus
) -> UUID | None:
    """Move one fact along the lifecycle in the caller's transaction; the conflict set it
    joins when it becomes active next to an active fact of another value, if any. A fact that
    leaves ``active`` leaves its open sets; one that becomes active re-enables its subject if
    the subject was disabled as a whole."""
    params = {"project_id": project_id, "id": fact_id}
    found = conn.execute(SELECT_FACT, params).fetchone()
    if found is None:
        raise FactNotFound("no fact with this id in this project")
    subject_id, predicate = found[1], found[2]
    lock_scopes(conn, project_id, {subject_id}, {(subject_id, predicate)})
    current = conn.cursor(row_factory=dict_row).execute(SELECT_FACT_FOR_UPDATE, params).fetchone()
    if current is None:
        raise FactNotFound("no fact with this id in this project")
    check_transition(fact_id, current["status"], target)
    transition(conn, project_id, [fact_id], target)
    if target != "active":
        if current["status"] == "active":
            leave_open_sets(conn, project_id, subject_id, fact_id)
        return None
    set_subject_disabled(conn, project_id, subject_id, False)
    active = conn.cursor(row_factory=dict_row).execute(SELECT_ACTIVE, {
        "project_id": project_id, "subject_id": subject_id, "predicate": predicate,
        "value": Jsonb(current["value"])}).fetchall()
    others = [row["id"] for row in active if row["id"] != fact_id and not row["same_value"]]
    return open_conflict(conn, project_id, subject_id, [*others, fact_id]) if others else None


def set_fact_status(
    db: Database, project_id: str, fact_id: UUID, request: FactStatusRequest
) -> FactStatusResponse:
    """``POST /v1/facts/{fact_id}/status``."""
    check_scope(project_id, request)
    with write_transaction(db, project_id) as conn:
        conflict_id = change_status(conn, project_id, fact_id, request.status)
        row = conn.cursor(row_factory=dict_row).execute(
            SELECT_FACT, {"project_id": project_id, "id": fact_id}).fetchone()
    return FactStatusResponse(fact=FactView.model_validate(row), conflict_id=conflict_id)


def list_facts(db: Database, project_id: str, request: FactListRequest) -> FactPage:
    """``GET /v1/facts``: one page of a scope's facts, oldest recorded first."""
    check_scope(project_id, request)
    facts, next_cursor = read_page(db, project_id, LIST_FACTS, request, view=FactView,
                                   sort_key=("recorded_from", "id"))
    return FactPage(facts=facts, next_cursor=next_cursor)
