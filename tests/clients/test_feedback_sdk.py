"""Feedback from the SDKs' side: the Python clients (sync and async) send ``used`` /
``missing`` against ``haki serve``, the handle helpers map a model's citations (``[f2]``,
``[e5]``) back to ids by the service's rule, and ``haki-mcp``'s ``feedback`` tool takes handles
or ids over stdio."""

import asyncio
import uuid
from datetime import datetime

import pytest

from haki_client import (
    AsyncHakiClient,
    ContextPacket,
    HakiClient,
    ValidationError,
    cited_ids,
    handles,
    resolve_refs,
)
from haki_local.demo import DEMO_PROJECT, DEMO_SUBJECT
from tests.clients.test_mcp import run, settings
from tests.e2e.conftest import Server

QUERY = "Which language should we use when writing to Marie about her invoice?"


def _packet(facts: int, episodes: int) -> tuple[ContextPacket, list[uuid.UUID], list[uuid.UUID]]:
    fact_ids = [uuid.uuid4() for _ in range(facts)]
    event_ids = [uuid.uuid4() for _ in range(episodes)]
    packet = ContextPacket.model_validate({
        "facts": [{"id": str(i), "predicate": "p", "value": "v", "confidence": None,
                   "valid_from": None, "source_event_ids": []} for i in fact_ids],
        "episodes": [{"event_id": str(i), "kind": "note", "occurred_at": "2026-12-01T10:00:00Z",
                      "excerpt": "x"} for i in event_ids],
        "warnings": [], "status": "ok", "empty_reason": None})
    return packet, fact_ids, event_ids


def test_handles_follow_the_packet_order_one_based():
    packet, facts, events = _packet(3, 2)
    assert handles(packet) == {"f1": facts[0], "f2": facts[1], "f3": facts[2],
                               "e1": events[0], "e2": events[1]}
    answer = "Write in English [f2], as she said [e2] — and again [f2]; see [f9] and e1."
    assert cited_ids(answer, packet) == [facts[1], events[1]]
    assert cited_ids("no citation at all", packet) == []
    assert resolve_refs(["f3", "[e1]", str(facts[0]), facts[0]], packet) == [
        facts[2], events[0], facts[0]]
    with pytest.raises(ValueError, match="f4, nonsense"):
        resolve_refs(["f1", "f4", "nonsense"], packet)
    with pytest.raises(ValueError, match="f1"):
        resolve_refs(["f1"], None)  # a handle needs its packet


def test_feedback_from_the_sync_and_async_clients(haki_server: Server):
    with HakiClient(haki_server.url, haki_server.key, project_id=DEMO_PROJECT) as haki:
        answer = haki.context(DEMO_SUBJECT, QUERY, purpose="support_reply", render=True)
        assert answer.packet.facts
        model_answer = "Write to her in English [f1]."
        stored = haki.feedback(answer.trace_id, subject_id=DEMO_SUBJECT,
                               used=cited_ids(model_answer, answer.packet), verdict="helpful")
        assert stored.used == [answer.packet.facts[0].id] and stored.source == "agent"
        with pytest.raises(ValidationError) as refused:
            haki.feedback(answer.trace_id, subject_id=DEMO_SUBJECT, missing=[uuid.uuid4()])
        assert refused.value.code == "invalid_feedback_ids" and refused.value.status == 422

    async def person() -> None:
        async with AsyncHakiClient(haki_server.url, haki_server.key,
                                   project_id=DEMO_PROJECT) as client:
            await client.feedback(answer.trace_id, subject_id=DEMO_SUBJECT, source="person",
                                  verdict="wrong", note="the invoice was in French")
            trace = await client.inspect(answer.trace_id, subject_id=DEMO_SUBJECT)
            assert [(f.source, f.verdict) for f in trace.feedback] == [
                ("agent", "helpful"), ("person", "wrong")]

    asyncio.run(person())

    # The call, with its feedback, in the project's eval set (sync and async alike).
    since = answer_time(haki_server, answer.trace_id)
    with HakiClient(haki_server.url, haki_server.key, project_id=DEMO_PROJECT) as haki:
        exported = haki.eval_set(since=since)
    (query,) = [q for q in exported.queries if q.query == QUERY]
    assert query.expected_fact_ids == [answer.packet.facts[0].id]
    assert query.category == "wrong"  # the person's verdict over the agent's

    async def exported_async() -> None:
        async with AsyncHakiClient(haki_server.url, haki_server.key,
                                   project_id=DEMO_PROJECT) as client:
            assert (await client.eval_set(since=since)).queries == exported.queries

    asyncio.run(exported_async())


def answer_time(server: Server, trace_id: object) -> datetime:
    """The time of a call (from its trace)."""
    with HakiClient(server.url, server.key, project_id=DEMO_PROJECT) as haki:
        return haki.inspect(str(trace_id), subject_id=DEMO_SUBJECT).created_at


def test_the_mcp_feedback_tool_takes_handles_or_ids(haki_server: Server):
    env = settings(haki_server)
    _, [recalled] = run(env, [("recall", {"subject_id": DEMO_SUBJECT, "query": QUERY})])
    trace_id = recalled.structured_content["trace_id"]
    with HakiClient(haki_server.url, haki_server.key, project_id=DEMO_PROJECT) as haki:
        packet = haki.inspect(trace_id, subject_id=DEMO_SUBJECT).packet
    ids = handles(packet)
    assert "f1" in ids
    _, [by_handle, bad_handle, by_id] = run(env, [
        ("feedback", {"trace_id": trace_id, "subject_id": DEMO_SUBJECT, "used": ["f1", "[f1]"],
                      "verdict": "helpful"}),
        ("feedback", {"trace_id": trace_id, "subject_id": DEMO_SUBJECT, "used": ["f99"]}),
        ("feedback", {"trace_id": trace_id, "subject_id": DEMO_SUBJECT,
                      "used": [str(ids["f1"])]})])
    assert not by_handle.is_error
    assert by_handle.structured_content["used"] == [str(ids["f1"])]
    assert bad_handle.is_error
    text = "".join(b.text for b in bad_handle.content if b.type == "text")
    assert text.startswith("validation_error:") and "f99" in text
    assert not by_id.is_error and by_id.structured_content["verdict"] is None
    with HakiClient(haki_server.url, haki_server.key, project_id=DEMO_PROJECT) as haki:
        trace = haki.inspect(trace_id, subject_id=DEMO_SUBJECT)
    assert [(f.source, f.used, f.verdict) for f in trace.feedback] == [
        ("agent", [ids["f1"]], None)]
