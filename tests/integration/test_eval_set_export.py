"""Traces as an eval set: calls → feedback → ``export_eval_set`` → ``haki eval`` on the export
reproduces the served recall of those calls, each query over the memory its call had (a subject
whose memory changed between two calls is exported once per state). The export reads one
project only."""

import json
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from haki.assembler import DEFAULT_CONFIG, Assembly, assemble
from haki.calls.evalset import EvalSetRequest, export_eval_set
from haki.calls.feedback import give_feedback
from haki.calls.models import FeedbackRequest
from haki.db import Database
from haki.db.connection import acting_for
from haki.embedding import Embedder
from haki.errors import ForbiddenScope
from haki.models import ContextRequest
from haki.settings import Settings
from haki_local.evaluation import EvalQuery, coverage, evaluate, load_labelled_set
from tests.integration.conftest import Writes


def _ask(writes: Writes, query: str, subject: str, budget: int) -> Assembly:
    request = ContextRequest(project_id=writes.project_id, subject_id=subject, query=query,
                             purpose="support_reply", budget_tokens=budget)
    with acting_for(writes.key_hash):
        return assemble(request, lambda: writes.embedder.embed_query(query), db=writes.db,
                        config=DEFAULT_CONFIG)


def _served(call: Assembly) -> list[UUID]:
    packet = call.response.packet
    return [f.id for f in packet.facts] + [e.event_id for e in packet.episodes]


def test_an_export_of_calls_with_feedback_reproduces_their_served_recall(
        writes: Writes, app_db: Database, embedder: Embedder, pg_superuser_url: str,
        tmp_path: Path) -> None:
    project = writes.project_id
    writes.events({"payload": {"role": "user", "text": "I moved to Lisbon last spring."}})
    language = writes.fact("preferred_language", "Portuguese")
    city = writes.fact("city", "Lyon")
    writes.fact("pet", "a parrot named Kiwi")
    writes.facts({"subject_id": "bob", "predicate": "city", "value": "Oslo"})

    calls: list[tuple[Assembly, str, list[UUID], list[UUID]]] = []

    def call_with_feedback(query: str, subject: str, budget: int, missing: list[UUID],
                           **feedback: Any) -> None:
        call = _ask(writes, query, subject, budget)
        served = _served(call)
        used = served[:1]
        missing = [i for i in missing if i not in served]
        with acting_for(writes.key_hash):
            give_feedback(app_db, project, call.response.trace_id, FeedbackRequest(
                project_id=project, subject_id=subject, used=used, missing=missing,
                **feedback))
        calls.append((call, subject, used, missing))

    call_with_feedback("Which language does she want her invoices in?", "alice", 14,
                       [city.id, language.id], verdict="unhelpful")
    # Her memory changes between her two calls: the second runs over the new state.
    writes.fact("city", "Lisbon", supersedes_id=str(city.id))
    call_with_feedback("Where does she live now?", "alice", 900, [language.id])
    call_with_feedback("Where does Bob live?", "bob", 900, [], source="person", verdict="helpful")
    _ask(writes, "a call without feedback is no query", "alice", 900)

    with acting_for(writes.key_hash):
        labelled = export_eval_set(app_db, project, EvalSetRequest(project_id=project))
        with pytest.raises(ForbiddenScope):
            export_eval_set(app_db, project, EvalSetRequest(project_id=project + "-other"))
    assert [q.subject_id for q in labelled.queries] == ["alice", "alice@2", "bob"]
    assert [q.category for q in labelled.queries] == ["unhelpful", None, "helpful"]
    values = {(f.subject_id, f.predicate): (f.value, f.status) for f in labelled.facts}
    assert values[("alice", "city")] == ("Lyon", "active")  # superseded after the call
    assert ("alice@2", "city") in values and values[("alice@2", "city")][0] == "Lisbon"
    assert {f.subject_id for f in labelled.facts} == {"alice", "alice@2", "bob"}

    path = tmp_path / "traces.json"
    path.write_text(labelled.model_dump_json(), encoding="utf-8")
    loaded = load_labelled_set(path)
    assert len(loaded.queries) == 3

    # The served recall of the calls, by haki eval's own coverage rules over what they served.
    served_recall = []
    for call, subject, used, missing in calls:
        packet = call.response.packet
        facts = {f.id for f in packet.facts} | {f.id for f in [language, city]}
        expected = [*used, *missing]
        original = EvalQuery(
            project_id=project, subject_id=subject, query="q",
            expected_fact_ids=[i for i in expected if i in facts
                               or any(i == f.id for f in packet.facts)],
            expected_event_ids=[i for i in expected if any(i == e.event_id
                                                           for e in packet.episodes)])
        assert original.expected == len(expected)
        served_recall.append(coverage(original, packet) / original.expected)
    report = evaluate(loaded, superuser_url=pg_superuser_url, embedder=embedder,
                      settings=Settings(), budgets=(900,))
    figures: dict[str, Any] = report["budgets"]["900"]  # type: ignore[index]
    assert figures["queries"] == 3
    assert figures["mean_recall"] == round(sum(served_recall) / len(served_recall), 4)
    assert figures["mean_recall"] < 1.0  # the missing memory is missed again
    json.dumps(report)  # the report is JSON, as the CLI prints it
