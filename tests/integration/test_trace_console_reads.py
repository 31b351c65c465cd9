"""Two reads of the console (``haki.calls``) on the runtime role: the project's calls, newest
first, and the current text of the candidates a trace names."""

import psycopg
import pytest

from haki.calls import CallListRequest, list_calls
from haki.calls.detail import candidate_texts
from haki.db import Database
from haki.errors import ForbiddenScope
from haki.text import event_text, fact_text
from tests.integration.conftest import Asker, Seeder, blend, unit_vector

Q = unit_vector(7)


def test_recent_calls_are_the_projects_newest_first(seed: Seeder, ask: Asker, app_db: Database,
                                                    project_id: str):
    seed.fact("note", "the note", blend(Q, unit_vector(70), 0.2))
    first = ask("first question", Q)
    second = ask("second question", Q, subject_id="bob", budget=50, purpose=None)
    def recent_calls(db: Database, project: str, limit: int = 50) -> list:
        request = CallListRequest(project_id=project, limit=limit)
        return list(list_calls(db, project, request).calls)

    calls = recent_calls(app_db, project_id)
    assert [c.trace_id for c in calls] == [second.response.trace_id, first.response.trace_id]
    newest = calls[0]
    assert (newest.subject_id, newest.query, newest.purpose, newest.budget_tokens) == (
        "bob", "second question", None, 50)
    assert (calls[1].facts_served, calls[1].candidates, calls[1].token_count) == (
        1, first.candidates, first.response.token_count)
    assert calls[1].latency_ms is not None and calls[0].created_at >= calls[1].created_at
    assert [c.trace_id for c in recent_calls(app_db, project_id, limit=1)] == [
        second.response.trace_id]
    # The key acts for its own project only.
    with pytest.raises(ForbiddenScope):
        list_calls(app_db, project_id, CallListRequest(project_id=project_id + "-other"))


def test_candidate_texts_are_the_current_texts_in_scope(seed: Seeder, app_db: Database,
                                                        project_id: str,
                                                        owner_conn: psycopg.Connection):
    fact = seed.fact("preferred_language", {"code": "fr"}, Q)
    event = seed.event("conversation.message", {"text": "Bonjour"}, Q)
    elsewhere = seed.fact("note", "bob's", Q, subject_id="bob")
    texts = candidate_texts(app_db, project_id=project_id, subject_id="alice",
                            fact_ids=[fact, elsewhere], event_ids=[event])
    assert texts == {fact: fact_text("preferred_language", {"code": "fr"}),
                     event: event_text("conversation.message", {"text": "Bonjour"})}
    owner_conn.execute("DELETE FROM facts WHERE id = %s", (fact,))
    assert fact not in candidate_texts(app_db, project_id=project_id, subject_id="alice",
                                       fact_ids=[fact], event_ids=[])
