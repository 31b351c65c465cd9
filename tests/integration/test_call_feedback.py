"""Feedback on a context call (``haki.calls.feedback``) on the runtime role: stored per call and
source, replaced by a repeat, read back with the trace; the ids checked against the call and its
subject; erased with the subject, redacted with a fact; dropped with the call's day partition."""

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import psycopg
import pytest

from haki import stats
from haki.assembler.trace import load_trace, new_trace_id
from haki.calls.feedback import LOCK_FACTS, give_feedback
from haki.calls.models import FeedbackRequest
from haki.db import Database, Role
from haki.db.connection import connect, set_scope
from haki.errors import ForbiddenScope, InvalidFeedbackIds, TraceNotFound, ValidationFailed
from haki.memory.api import ForgetRequest
from haki.memory.forget import forget
from haki.memory.store import lock_scopes
from haki.models import CallFeedback
from haki.validation import parse
from tests.conftest import acting_as_tenant, tenant_thread
from tests.integration.conftest import Asker, Seeder, blend, unit_vector, wait_until_blocked_by

Q = unit_vector(11)


def feedback(db: Database, project_id: str, trace_id: UUID, **body: Any) -> CallFeedback:
    """The route's core, called as the handler calls it (body validated first)."""
    request = parse(FeedbackRequest, {"project_id": project_id, "subject_id": "alice", **body})
    return give_feedback(db, project_id, trace_id, request)


@pytest.fixture
def served(seed: Seeder, ask: Asker) -> dict[str, Any]:
    """A call of alice's that served two facts and an episode; a fact of alice's it did not
    serve (another topic, below the floor of a small budget) and one of bob's."""
    language = seed.fact("preferred_language", "French", blend(Q, unit_vector(12), 0.1))
    city = seed.fact("city", "Lyon", blend(Q, unit_vector(13), 0.2))
    episode = seed.event("conversation.message", {"role": "user", "text": "Bonjour"},
                         blend(Q, unit_vector(14), 0.15))
    call = ask("which language?", Q, budget=60)
    packet = call.response.packet
    served_ids = {f.id for f in packet.facts} | {e.event_id for e in packet.episodes}
    assert {language, city, episode} <= served_ids, "the fixture's call must serve all three"
    unserved = seed.fact("pet", "a cat named Miso", unit_vector(99))
    assert unserved not in served_ids
    bobs = seed.fact("city", "Oslo", Q, subject_id="bob")
    return {"trace": call.response.trace_id, "language": language, "city": city,
            "episode": episode, "unserved": unserved, "bobs": bobs}


def test_feedback_is_stored_per_source_replaced_and_read_with_the_trace(
        app_db: Database, project_id: str, served: dict[str, Any]) -> None:
    trace = served["trace"]
    first = feedback(app_db, project_id, trace, used=[served["language"], served["episode"]],
                     missing=[served["unserved"]], verdict="unhelpful", note="forgot the pet")
    assert (first.source, first.used, first.missing, first.verdict, first.note) == (
        "agent", [served["language"], served["episode"]], [served["unserved"]], "unhelpful",
        "forgot the pet")
    # A repeat from the same source replaces; a person's feedback is kept beside it.
    again = feedback(app_db, project_id, trace, used=[served["city"], served["city"]])
    person = feedback(app_db, project_id, trace, source="person", verdict="wrong")
    assert again.used == [served["city"]] and again.missing == [] and again.verdict is None
    assert again.updated_at >= first.updated_at
    inspected = load_trace(app_db, project_id=project_id, subject_id="alice", trace_id=trace)
    assert inspected.feedback == [again, person]


def test_ids_are_checked_against_the_call_and_its_subject(
        app_db: Database, project_id: str, served: dict[str, Any]) -> None:
    trace = served["trace"]
    stranger = uuid4()
    with pytest.raises(InvalidFeedbackIds) as refused:
        feedback(app_db, project_id, trace, used=[served["language"], served["unserved"]],
                 missing=[served["bobs"], stranger, served["city"]])
    message = refused.value.message
    assert f"used: not served by this call: {served['unserved']}" in message
    assert f"no fact or event of the call's subject: {served['bobs']}, {stranger}" in message
    # Memory the call served cannot be missing from it.
    assert f"missing: served by this call: {served['city']}" in message
    assert str(served["language"]) not in message
    assert refused.value.status == 422 and refused.value.code == "invalid_feedback_ids"
    # Nothing was stored.
    assert load_trace(app_db, project_id=project_id, subject_id="alice",
                      trace_id=trace).feedback == []
    with pytest.raises(ValidationFailed, match="both used and missing"):
        feedback(app_db, project_id, trace, used=[served["city"]], missing=[served["city"]])
    with pytest.raises(ValidationFailed):
        feedback(app_db, project_id, trace, verdict="great")
    with pytest.raises(ValidationFailed):
        feedback(app_db, project_id, trace, source="model")


def test_a_call_out_of_scope_is_not_found(
        app_db: Database, project_id: str, served: dict[str, Any], db_urls: dict[Role, str],
        ask: Asker, seed: Seeder) -> None:
    with pytest.raises(TraceNotFound):
        feedback(app_db, project_id, new_trace_id())
    bobs_call = ask("where?", Q, subject_id="bob").response.trace_id
    with pytest.raises(TraceNotFound):  # bob's call named as alice's
        feedback(app_db, project_id, bobs_call, used=[])
    with pytest.raises(ForbiddenScope):
        give_feedback(app_db, project_id, served["trace"], parse(FeedbackRequest, {
            "project_id": "another", "subject_id": "alice"}))
    # Another project's key cannot reach this project's call, even naming it.
    other = f"{project_id}-other"
    with acting_as_tenant(db_urls[Role.OWNER], other), pytest.raises(TraceNotFound):
        feedback(app_db, other, served["trace"], used=[served["language"]])
    with connect(db_urls[Role.OWNER]) as owner:
        assert owner.execute("SELECT count(*) FROM call_feedback WHERE trace_id = %s",
                             (served["trace"],)).fetchone() == (0,)


def test_erasing_a_fact_cuts_it_out_and_erasing_the_subject_removes_the_feedback(
        app_db: Database, project_id: str, served: dict[str, Any],
        owner_conn: psycopg.Connection) -> None:
    trace = served["trace"]
    feedback(app_db, project_id, trace, used=[served["language"], served["city"]],
             missing=[served["unserved"]], note="kept")
    feedback(app_db, project_id, trace, source="person", missing=[served["unserved"]])
    erased = forget(app_db, project_id, ForgetRequest(
        project_id=project_id, fact_id=served["unserved"], mode="delete"))
    assert erased.counts["call_feedback"] == 2
    erased = forget(app_db, project_id, ForgetRequest(
        project_id=project_id, fact_id=served["language"], mode="delete"))
    assert erased.counts["call_feedback"] == 1
    left = load_trace(app_db, project_id=project_id, subject_id="alice", trace_id=trace).feedback
    assert [(f.source, f.used, f.missing, f.note) for f in left] == [
        ("agent", [served["city"]], [], "kept"), ("person", [], [], None)]
    receipt = owner_conn.execute(
        "SELECT call_feedback FROM erasure_receipts WHERE id = %s", (erased.receipt_id,)
    ).fetchone()
    assert receipt == (1,)
    gone = forget(app_db, project_id, ForgetRequest(
        project_id=project_id, subject_id="alice", mode="delete"))
    assert gone.counts["call_feedback"] == 2
    assert owner_conn.execute("SELECT count(*) FROM call_feedback WHERE project_id = %s",
                              (project_id,)).fetchone() == (0,)


def test_feedback_goes_with_its_calls_day_partition(
        migrated_database: Callable[[], dict[Role, str]]) -> None:
    urls = migrated_database()
    now = datetime.now(UTC)
    old_at, recent_at = now - timedelta(days=40), now - timedelta(hours=2)
    with connect(urls[Role.OWNER]) as owner:
        owner.execute("SELECT haki_trace_partitions(7, 36500, %s)", ((now - timedelta(days=45))
                                                                     .date(),))
        traces = {}
        for name, at in (("old", old_at), ("recent", recent_at)):
            traces[name] = new_trace_id(at)
            owner.execute(
                "INSERT INTO context_calls (trace_id, project_id, subject_id, query, "
                "budget_tokens, packet, token_count, status, facts_served, episodes_served, "
                "candidates, embed_ms, retrieval_ms, latency_ms, created_at) VALUES "
                "(%s, 'p', 's', 'q', 100, %s, 7, 'ok', 0, 0, 0, 1, 1, 1, %s)",
                (traces[name], '{"facts": [], "episodes": [], "warnings": [], "status": "ok",'
                               ' "empty_reason": null}', at))
    app = Database(urls[Role.APP])
    stats_db = Database(urls[Role.STATS])
    try:
        with acting_as_tenant(urls[Role.OWNER], "p"):
            for trace in traces.values():
                give_feedback(app, "p", trace, FeedbackRequest(
                    project_id="p", subject_id="s", verdict="helpful"))
        stats.aggregate(stats_db)
        dropped = stats.maintain_partitions(stats_db, retention_days=30)
        assert dropped.partitions_dropped >= 3  # at least the old day's three tables
        assert dropped.default_rows == 0
        with connect(urls[Role.OWNER]) as owner:
            rows = owner.execute("SELECT trace_id FROM call_feedback").fetchall()
            assert rows == [(traces["recent"],)]
            assert owner.execute(
                "SELECT count(*) FROM pg_class WHERE relname = %s",
                (f"call_feedback_p{old_at:%Y%m%d}",)).fetchone() == (0,)
    finally:
        app.close()
        stats_db.close()


def erase_behind(holder: psycopg.Connection, owner_url: str, app_db: Database,
                 project_id: str, request: ForgetRequest, message: str) -> list[int]:
    """Runs the erasure ``request`` while ``holder`` keeps its transaction open, checks that it
    waits for it, commits ``holder`` and returns the erased feedback count (empty if the
    erasure failed)."""
    done: list[int] = []
    thread = tenant_thread(lambda: done.append(
        forget(app_db, project_id, request).counts["call_feedback"]))
    thread.start()
    wait_until_blocked_by(holder, owner_url, thread, message)
    holder.execute("COMMIT")
    thread.join(timeout=60)
    return done


def test_an_erasure_that_waits_for_a_feedback_in_flight_cuts_its_fact_out(
        app_db: Database, project_id: str, served: dict[str, Any],
        db_urls: dict[Role, str]) -> None:
    """Feedback written in a transaction still open, naming a fact (locked as the write locks
    it): erasing that fact waits for it, then removes the id from the committed feedback; and
    a subject's erasure waits for a feedback in flight, then removes it."""
    trace = served["trace"]
    with connect(db_urls[Role.APP]) as holder:
        holder.execute("BEGIN")
        set_scope(holder, project_id)
        holder.execute(LOCK_FACTS, {"project_id": project_id, "subject_id": "alice",
                                    "ids": [served["unserved"]]})
        holder.execute(
            "INSERT INTO call_feedback (project_id, trace_id, call_created_at, source, "
            "subject_id, used, missing) SELECT project_id, trace_id, created_at, 'agent', "
            "subject_id, ARRAY[%s::uuid], ARRAY[%s::uuid] FROM context_calls "
            "WHERE trace_id = %s", (served["language"], served["unserved"], trace))
        done = erase_behind(holder, db_urls[Role.OWNER], app_db, project_id, ForgetRequest(
            project_id=project_id, fact_id=served["unserved"], mode="delete"),
            "the erasure did not wait for the feedback in flight")
    assert done == [1]
    (left,) = load_trace(app_db, project_id=project_id, subject_id="alice",
                         trace_id=trace).feedback
    assert (left.used, left.missing) == ([served["language"]], [])

    with connect(db_urls[Role.APP]) as holder:
        holder.execute("BEGIN")
        set_scope(holder, project_id)
        lock_scopes(holder, project_id, {"alice"})
        holder.execute(
            "INSERT INTO call_feedback (project_id, trace_id, call_created_at, source, "
            "subject_id, used, missing) SELECT project_id, trace_id, created_at, 'person', "
            "subject_id, '{}', '{}' FROM context_calls WHERE trace_id = %s", (trace,))
        erased = erase_behind(holder, db_urls[Role.OWNER], app_db, project_id, ForgetRequest(
            project_id=project_id, subject_id="alice", mode="delete"),
            "the subject's erasure did not wait for the feedback in flight")
    assert erased == [2]
    with connect(db_urls[Role.OWNER]) as owner:
        assert owner.execute("SELECT count(*) FROM call_feedback WHERE project_id = %s",
                             (project_id,)).fetchone() == (0,)
