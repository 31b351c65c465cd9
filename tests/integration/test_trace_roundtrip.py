"""The trace write (binary arrays, ``haki.assembler.trace.write_trace``) read back by inspect:
every decision field of every kind — NULLs, bools, UUIDs, ranks, scores at ``real`` precision,
every action and reason code — comes back as written, in order."""

from uuid import uuid4

import pytest

from haki.assembler.trace import load_trace, new_trace_id, write_trace
from haki.db import Database
from haki.models import ContextPacket, ContextRequest, ContextResponse, TraceDecision

ACTIONS = ("included", "excluded", "blocked")
REASONS = ("top_score", "episode_match", "neighbour_expansion", "over_budget",
           "volatility_expired", "below_relevance_floor", "conflict_open")


def _decisions() -> list[TraceDecision]:
    decisions = []
    for i in range(40):
        fact = i % 3 != 2
        decisions.append(TraceDecision(
            ordinal=i,
            fact_id=uuid4() if fact else None,
            event_id=None if fact else uuid4(),
            action=ACTIONS[i % len(ACTIONS)],  # type: ignore[arg-type]
            reason_code=REASONS[i % len(REASONS)],
            rank=i + 1 if i % 4 else None,
            score=1.0 / (i + 3) if i % 5 else None,
            similarity=0.1234567890123 * (i % 7) if i % 6 else None,
            text_rank=1e-7 * i if i % 2 else None,
            tokens=10 * i if i % 9 else None,
            unconfirmed=i % 2 == 0,
            vector_rank=i if i % 3 else None,
            text_arm_rank=None if i % 3 else i // 3 + 1,
            expanded_from=uuid4() if i % 8 == 0 else None,
        ))
    return decisions


def test_every_decision_field_reads_back_as_written(app_db: Database, project_id: str) -> None:
    decisions = _decisions()
    request = ContextRequest(project_id=project_id, subject_id="s", query="q", purpose="test")
    response = ContextResponse(
        packet=ContextPacket(facts=[], episodes=[], warnings=[], status="ok", empty_reason=None),
        token_count=0, trace_id=new_trace_id())
    with app_db.transaction(project_id, pipeline=True) as conn:
        write_trace(conn, request, response, decisions,
                    timings_ms={"embed": 1.0, "retrieval": 2.0, "total": 3.0})
    read = load_trace(app_db, project_id=project_id, subject_id="s",
                      trace_id=response.trace_id).decisions
    assert len(read) == len(decisions)
    for got, want in zip(read, decisions, strict=True):
        for name in TraceDecision.__slots__:
            g, w = getattr(got, name), getattr(want, name)
            if isinstance(w, float):
                assert g == pytest.approx(w, rel=1e-6), name  # stored as real
            else:
                assert g == w, name


def test_an_empty_trace_reads_back_empty(app_db: Database, project_id: str) -> None:
    request = ContextRequest(project_id=project_id, subject_id="s", query="q", purpose="test")
    response = ContextResponse(
        packet=ContextPacket(facts=[], episodes=[], warnings=[], status="ok",
                             empty_reason="no_memory"),
        token_count=0, trace_id=new_trace_id())
    with app_db.transaction(project_id, pipeline=True) as conn:
        write_trace(conn, request, response, [],
                    timings_ms={"embed": 1.0, "retrieval": 2.0, "total": 3.0})
    trace = load_trace(app_db, project_id=project_id, subject_id="s",
                       trace_id=response.trace_id)
    assert trace.decisions == []
    assert trace.packet.empty_reason == "no_memory"
