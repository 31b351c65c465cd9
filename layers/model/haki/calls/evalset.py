"""A project's calls with feedback as a labelled set (``haki eval-set export``,
``GET /v1/eval-set``), in the format ``haki eval`` reads: a memory document (``facts``,
``events``, ``conflicts``) and ``queries``, one per call with feedback — its query, purpose and
budget, and as expected ids the union of what its feedback says was used and missing (facts
and events apart; an id since erased is left out).

The memory is the subjects' **as of each call**: the events recorded by then; the facts
recorded by then and not yet retracted (``recorded_to``), a fact superseded after the call
being active again; the conflict sets open at the time. What the store does not date is taken
as it is now: a fact's status otherwise (a fact disabled since reads disabled), its validity,
its reinforcement. Calls of one subject that saw the same memory share it; when a subject's
memory changed between two calls, each later state is a subject of its own in the set
(``<subject>@2``, …) whose ids are derived from the originals (UUIDv5), the queries naming
them alike, so every query runs over exactly the memory its call had.

It reads one project (the key's, or the owner's choice of project): every statement names it.
"""

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.rows import dict_row
from pydantic import Field

from haki.calls.models import CallWindow
from haki.db import Database
from haki.memory.api import _Body, check_scope
from haki.models import SCOPE_MAX_CHARS, FactRecord

#: Calls per export through the API (the newest ones of the window are kept).
MAX_EXPORT_CALLS = 1000
DEFAULT_EXPORT_CALLS = 500
#: The namespace of the ids derived for a subject's later memory states.
_DERIVED = UUID("6b1d3c52-8f0e-4f57-9a55-2f0c0e4d6a31")


class EvalSetRequest(CallWindow):
    """The calls of the window (default: the whole retention window) with feedback."""

    #: Calls at most, the newest of the window; ``None`` (the owner's CLI): all of them.
    limit: int | None = Field(default=DEFAULT_EXPORT_CALLS, ge=1, le=MAX_EXPORT_CALLS)


class ExportedEvent(_Body):
    id: UUID
    project_id: str
    subject_id: str = Field(max_length=SCOPE_MAX_CHARS)
    kind: str
    payload: dict[str, Any]
    occurred_at: datetime


class ExportedConflict(_Body):
    id: UUID
    project_id: str
    subject_id: str
    fact_ids: list[UUID]
    status: str = "open"
    reason: str | None


class ExportedQuery(_Body):
    project_id: str
    subject_id: str
    query: str
    purpose: str | None
    budget_tokens: int
    expected_fact_ids: list[UUID]
    expected_event_ids: list[UUID]
    #: The verdict of the call's feedback (a person's over the agent's), if any.
    category: str | None


class EvalSet(_Body):
    """A labelled set: what ``haki eval FILE`` reads."""

    facts: list[FactRecord]
    events: list[ExportedEvent]
    conflicts: list[ExportedConflict]
    queries: list[ExportedQuery]


#: The calls with feedback of the window, one row per (call, source), newest calls first
#: (call_feedback_project_idx, then the call by its primary key).
SELECT_FEEDBACK_CALLS = """
SELECT c.trace_id, c.subject_id, c.query, c.purpose, c.budget_tokens, c.created_at,
       f.used, f.missing, f.verdict, f.source
FROM call_feedback AS f
JOIN context_calls AS c
  ON c.project_id = f.project_id AND c.trace_id = f.trace_id AND c.created_at = f.call_created_at
WHERE f.project_id = %(project_id)s
  AND (%(since)s::timestamptz IS NULL OR f.call_created_at >= %(since)s)
  AND (%(until)s::timestamptz IS NULL OR f.call_created_at < %(until)s)
ORDER BY c.created_at DESC, c.trace_id, f.source
"""
#: The subjects' memory (facts_scope_idx, events_scope_idx, conflict_sets_scope_idx).
SELECT_FACTS = """
SELECT id, subject_id, predicate, value, qualifiers, status, confidence, volatility,
       valid_from, valid_to, recorded_from, recorded_to, last_reinforced_at, source_event_ids,
       version
FROM facts WHERE project_id = %(project_id)s AND subject_id = ANY(%(subjects)s)
ORDER BY recorded_from, id
"""
SELECT_EVENTS = """
SELECT id, subject_id, kind, payload, occurred_at, recorded_at
FROM events WHERE project_id = %(project_id)s AND subject_id = ANY(%(subjects)s)
ORDER BY occurred_at, id
"""
SELECT_CONFLICTS = """
SELECT id, subject_id, fact_ids, reason, created_at, resolved_at
FROM conflict_sets WHERE project_id = %(project_id)s AND subject_id = ANY(%(subjects)s)
ORDER BY created_at, id
"""


class _Call:
    """A call with its feedback, its sources merged."""

    def __init__(self, row: dict[str, Any]) -> None:
        self.row = row
        self.used: dict[UUID, None] = {}
        self.missing: dict[UUID, None] = {}
        self.verdicts: dict[str, str] = {}

    def add(self, row: dict[str, Any]) -> None:
        self.used.update(dict.fromkeys(row["used"]))
        self.missing.update(dict.fromkeys(row["missing"]))
        if row["verdict"]:
            self.verdicts[row["source"]] = row["verdict"]


def export_eval_set(db: Database, project_id: str, request: EvalSetRequest) -> EvalSet:
    """The labelled set of the project's calls with feedback in ``request``'s window."""
    check_scope(project_id, request)
    params = {"project_id": project_id, "since": request.since, "until": request.until}
    with db.transaction(project_id) as conn:
        cursor = conn.cursor(row_factory=dict_row)
        calls: dict[UUID, _Call] = {}
        for row in cursor.execute(SELECT_FEEDBACK_CALLS, params).fetchall():
            if row["trace_id"] not in calls:
                if request.limit is not None and len(calls) == request.limit:
                    break
                calls[row["trace_id"]] = _Call(row)
            calls[row["trace_id"]].add(row)
        subjects = sorted({c.row["subject_id"] for c in calls.values()})
        scope = {"project_id": project_id, "subjects": subjects}
        facts = cursor.execute(SELECT_FACTS, scope).fetchall()
        events = cursor.execute(SELECT_EVENTS, scope).fetchall()
        conflicts = cursor.execute(SELECT_CONFLICTS, scope).fetchall()
    return _labelled(project_id, sorted(calls.values(), key=lambda c: c.row["created_at"]),
                     facts, events, conflicts)


def _labelled(project_id: str, calls: Sequence[_Call], facts: Sequence[dict[str, Any]],
              events: Sequence[dict[str, Any]], conflicts: Sequence[dict[str, Any]]) -> EvalSet:
    out = EvalSet(facts=[], events=[], conflicts=[], queries=[])
    #: Per subject, its memory states in the order first seen: state → its export subject.
    states: dict[str, dict[tuple[frozenset[UUID], ...], str]] = {}
    for call in calls:
        subject, at = call.row["subject_id"], call.row["created_at"]
        seen = _memory_at(subject, at, facts, events, conflicts)
        key = tuple(frozenset(r["id"] for r in part) for part in seen)
        known = states.setdefault(subject, {})
        if key not in known:
            known[key] = (subject if not known
                          else f"{subject[:SCOPE_MAX_CHARS - 6]}@{len(known) + 1}")
            _add_memory(out, project_id, known[key], subject, at, seen)
        alias = known[key]
        fact_ids = {r["id"] for r in facts if r["subject_id"] == subject}
        event_ids = {r["id"] for r in events if r["subject_id"] == subject}
        expected = [*call.used, *(i for i in call.missing if i not in call.used)]
        out.queries.append(ExportedQuery(
            project_id=project_id, subject_id=alias, query=call.row["query"],
            purpose=call.row["purpose"], budget_tokens=call.row["budget_tokens"],
            expected_fact_ids=[_id(i, alias, subject) for i in expected if i in fact_ids],
            expected_event_ids=[_id(i, alias, subject) for i in expected if i in event_ids],
            category=call.verdicts.get("person") or call.verdicts.get("agent")))
    return out


def _memory_at(subject: str, at: datetime, facts: Sequence[dict[str, Any]],
               events: Sequence[dict[str, Any]], conflicts: Sequence[dict[str, Any]],
               ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The subject's facts, events and open conflict sets as a call at ``at`` saw them."""
    seen_facts = [f for f in facts if f["subject_id"] == subject and f["recorded_from"] <= at
                  and (f["recorded_to"] is None or f["recorded_to"] > at)
                  and f["status"] != "deleted"]
    seen_events = [e for e in events if e["subject_id"] == subject and e["recorded_at"] <= at]
    ids = {f["id"] for f in seen_facts}
    seen_conflicts = [c for c in conflicts if c["subject_id"] == subject
                      and c["created_at"] <= at
                      and (c["resolved_at"] is None or c["resolved_at"] > at)
                      and len(ids.intersection(c["fact_ids"])) >= 2]
    return seen_facts, seen_events, seen_conflicts


def _id(original: UUID, alias: str, subject: str) -> UUID:
    """The id of ``original`` in the export subject ``alias``: itself in the subject's first
    memory state, a UUIDv5 of it in each later one."""
    return original if alias == subject else uuid.uuid5(_DERIVED, f"{alias}\x1f{original}")


def _add_memory(out: EvalSet, project_id: str, alias: str, subject: str, at: datetime,
                seen: tuple[list[dict[str, Any]], ...]) -> None:
    facts, events, conflicts = seen
    event_ids = {e["id"] for e in events}
    fact_ids = {f["id"] for f in facts}
    for f in facts:
        retracted_later = f["recorded_to"] is not None and f["recorded_to"] > at
        out.facts.append(FactRecord(
            id=_id(f["id"], alias, subject), project_id=project_id, subject_id=alias,
            predicate=f["predicate"], value=f["value"], qualifiers=f["qualifiers"],
            status="active" if retracted_later else f["status"],
            confidence=f["confidence"], volatility=f["volatility"], valid_from=f["valid_from"],
            valid_to=f["valid_to"], recorded_from=f["recorded_from"],
            last_reinforced_at=f["last_reinforced_at"], version=f["version"],
            source_event_ids=[_id(e, alias, subject) for e in f["source_event_ids"]
                              if e in event_ids]))
    out.events.extend(ExportedEvent(
        id=_id(e["id"], alias, subject), project_id=project_id, subject_id=alias,
        kind=e["kind"], payload=e["payload"], occurred_at=e["occurred_at"]) for e in events)
    out.conflicts.extend(ExportedConflict(
        id=_id(c["id"], alias, subject), project_id=project_id, subject_id=alias,
        fact_ids=[_id(i, alias, subject) for i in c["fact_ids"] if i in fact_ids],
        reason=c["reason"]) for c in conflicts)
