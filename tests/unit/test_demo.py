"""The demo data set: valid, varied enough to show every rule, and shifted to today."""

from datetime import UTC, datetime, timedelta

from haki_local.demo import ANCHOR, DEMO_PROJECT, DEMO_SUBJECT, demo_document, shift_dates


def test_demo_covers_the_cases_the_local_api_shows() -> None:
    doc = demo_document()
    projects = {f.project_id for f in doc.facts}
    assert len(projects) >= 2 and DEMO_PROJECT in projects
    assert len({(f.project_id, f.subject_id) for f in doc.facts}) >= 4
    assert DEMO_SUBJECT in {f.subject_id for f in doc.facts if f.project_id == DEMO_PROJECT}
    assert sum(c.status == "open" for c in doc.conflicts) >= 2
    assert {"slow", "volatile", "ephemeral"} <= {f.volatility for f in doc.facts}
    assert any(f.source_event_ids for f in doc.facts)
    assert all(e.occurred_at is not None for e in doc.events)
    texts = " ".join(str(f.value) for f in doc.facts).lower()
    assert "facture" in texts and "invoice" in texts  # French and English


def test_every_source_event_and_conflict_fact_exists_in_the_same_scope() -> None:
    doc = demo_document()
    events = {e.id: (e.project_id, e.subject_id) for e in doc.events}
    facts = {f.id: (f.project_id, f.subject_id) for f in doc.facts}
    for fact in doc.facts:
        assert all(events[i] == (fact.project_id, fact.subject_id) for i in fact.source_event_ids)
    for conflict in doc.conflicts:
        assert all(facts[i] == (conflict.project_id, conflict.subject_id)
                   for i in conflict.fact_ids)


def test_shift_moves_the_anchor_to_today_keeps_gaps_and_never_reaches_the_future() -> None:
    doc = demo_document()
    now = datetime(2031, 3, 14, 9, 30, tzinfo=UTC)
    shifted = shift_dates(doc, now)
    delta = timedelta(days=(now - ANCHOR).days)
    assert timedelta(0) <= now - (ANCHOR + delta) < timedelta(days=1)
    for before, after in zip(doc.events, shifted.events, strict=True):
        assert after.occurred_at - before.occurred_at == delta
        assert after.occurred_at <= now
    for before, after in zip(doc.facts, shifted.facts, strict=True):
        assert before.valid_from is None or after.valid_from - before.valid_from == delta
        assert after.id == before.id and after.value == before.value
