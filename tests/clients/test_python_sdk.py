"""The Python SDK over real HTTP: against ``haki serve`` for the routes and the error codes,
against a scripted loopback server for retries, timeouts and fail-open."""

import asyncio
import json
import logging
import typing
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from haki_client import (
    DEFAULT_PURPOSE,
    APIConnectionError,
    APITimeoutError,
    AsyncHakiClient,
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    ConflictError,
    EventIn,
    HakiClient,
    HakiError,
    MessageIn,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
    UnexpectedResponseError,
    ValidationError,
    render,
)
from haki_local.demo import DEMO_PROJECT, DEMO_SUBJECT
from tests.clients.hostile import HOSTILE_QUERY, HOSTILE_SUBJECT
from tests.clients.stub import Scripted, closed_port_url, stub_server
from tests.e2e.conftest import Client, Server, create_key

QUERY = "Which language should we use when writing to Marie about her invoice?"
OTHER_PROJECT = "atelier-voyage"


@pytest.fixture
def haki(haki_server: Server):
    with HakiClient(haki_server.url, haki_server.key, project_id=DEMO_PROJECT) as client:
        yield client


def _packet(text: str) -> dict:
    return {"packet": {"facts": [], "episodes": [], "warnings": [], "status": "ok",
                       "empty_reason": "no_memory"},
            "token_count": 0, "trace_id": text}


OK = Scripted(200, _packet("3fdb9157-2449-4afe-a59b-5c5b0c621f5a"))
UNAVAILABLE = Scripted(503, {"error": {"code": "service_unavailable", "message": "retry"}})


def error_of(call: Callable[[], object]) -> HakiError:
    with pytest.raises(HakiError) as caught:
        call()
    return caught.value


# --------------------------------------------------------------------- the real service


def test_context_inspect_and_stats(haki: HakiClient):
    answer = haki.context(DEMO_SUBJECT, QUERY, purpose="support_reply", budget_tokens=120,
                          render=True)
    assert answer.served and answer.packet.facts and answer.token_count <= 120
    assert {f.predicate for f in answer.packet.facts} >= {"preferred_language"}
    block = render(answer)
    assert block.startswith("<haki_memory>\n[f1] ") and block.endswith("</haki_memory>")
    assert answer.token_count == len(block) // 4  # the budget bounds the block
    assert block == answer.block

    trace = haki.inspect(answer.trace_id, subject_id=DEMO_SUBJECT)
    assert trace.packet == answer.packet and trace.query == QUERY
    assert {d.action for d in trace.decisions} >= {"included", "blocked"}

    stats = haki.stats_overview()
    assert stats.project_id == DEMO_PROJECT and stats.recall_count >= 1
    assert len(stats.events_this_week) == 7
    assert haki.stats_overview(subject_id=DEMO_SUBJECT).subject_id == DEMO_SUBJECT


def test_the_block_is_the_services_string_and_only_when_asked(haki: HakiClient,
                                                              haki_server: Server):
    answer = haki.context(HOSTILE_SUBJECT, HOSTILE_QUERY, purpose="test", budget_tokens=4000,
                          render=True)
    assert len(answer.packet.facts) >= 5 and answer.packet.episodes
    # The same call without the SDK: the block is the service's, character for character.
    raw = Client(haki_server.url).request(
        "POST", "/v1/context", key=haki_server.key, body={
            "project_id": DEMO_PROJECT, "subject_id": HOSTILE_SUBJECT, "query": HOSTILE_QUERY,
            "purpose": "test", "budget_tokens": 4000, "render": True}).json
    assert raw["packet"]["facts"] and render(answer) == raw["block"]

    plain = haki.context(HOSTILE_SUBJECT, HOSTILE_QUERY, purpose="test", budget_tokens=4000)
    assert plain.block is None and plain.packet.facts
    with pytest.raises(ValueError, match="render=True"):
        render(plain)
    with pytest.raises(TypeError, match="ContextResponse"):
        render(answer.packet)  # type: ignore[arg-type]


@pytest.mark.parametrize(("call", "family", "code", "status"), [
    (lambda c: c.context(DEMO_SUBJECT, QUERY, budget_tokens=100_001), ValidationError,
     "validation_error", None),
    (lambda c: c.context("", QUERY), ValidationError, "missing_scope", 422),
    (lambda c: c.context(DEMO_SUBJECT, QUERY, project_id=OTHER_PROJECT), PermissionDeniedError,
     "forbidden_scope", 403),
    (lambda c: c.inspect(uuid.uuid4(), subject_id=DEMO_SUBJECT), NotFoundError,
     "trace_not_found", 404),
    (lambda c: c.inspect("not-a-uuid", subject_id=DEMO_SUBJECT), NotFoundError,
     "trace_not_found", 404),
])
def test_errors_carry_the_stable_code(haki: HakiClient, call, family, code, status):
    with pytest.raises(family) as caught:
        call(haki)
    assert (caught.value.code, caught.value.status) == (code, status)
    assert caught.value.message
    assert caught.value.request_id or status is None  # None: refused before any request
    assert isinstance(caught.value, BadRequestError) and isinstance(caught.value, HakiError)


def test_a_context_call_names_a_purpose_by_default_and_reads_ok(haki: HakiClient):
    who = subject()  # no conflict, nothing stale: nothing is hidden
    haki.record_fact(who, "preferred_language", "fr")
    answer = haki.context(who, QUERY)
    assert answer.packet.facts and answer.packet.status == "ok"
    assert answer.packet.warnings == []
    assert haki.inspect(answer.trace_id, subject_id=who).purpose == DEFAULT_PURPOSE
    # Asked for no purpose, the service says so and the packet reads degraded.
    bare = haki.context(who, QUERY, purpose=None)
    assert bare.packet.status == "degraded"
    assert any(w.startswith("missing_purpose") for w in bare.packet.warnings)


def test_a_bad_key_is_unauthorized_and_never_fails_open(haki_server: Server):
    bad = "hk_" + "A" * 43
    with HakiClient(haki_server.url, bad, project_id=DEMO_PROJECT, fail_open=True) as client:
        error = error_of(lambda: client.context(DEMO_SUBJECT, QUERY))
    assert (error.code, error.status) == ("unauthorized", 401)
    assert isinstance(error, AuthenticationError)


def test_no_key_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("HAKI_API_KEY", raising=False)
    with pytest.raises(ConfigurationError) as caught:
        HakiClient("http://127.0.0.1:1")
    assert caught.value.code == "configuration_error"


def test_settings_come_from_the_environment(haki_server: Server, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("HAKI_URL", haki_server.url)
    monkeypatch.setenv("HAKI_API_KEY", haki_server.key)
    monkeypatch.setenv("HAKI_PROJECT_ID", DEMO_PROJECT)
    with HakiClient() as client:
        assert client.context(DEMO_SUBJECT, QUERY).served


def test_async_client(haki_server: Server):
    async def run() -> None:
        async with AsyncHakiClient(haki_server.url, haki_server.key,
                                   project_id=DEMO_PROJECT) as client:
            answers = await asyncio.gather(
                client.context(DEMO_SUBJECT, QUERY, purpose="a"),
                client.context(HOSTILE_SUBJECT, HOSTILE_QUERY, purpose="b"))
            assert all(a.served for a in answers)
            trace = await client.inspect(answers[0].trace_id, subject_id=DEMO_SUBJECT)
            assert trace.packet == answers[0].packet
            assert (await client.stats_overview()).recall_count >= 2
            with pytest.raises(HakiError) as caught:
                await client.inspect(uuid.uuid4(), subject_id=DEMO_SUBJECT)
            assert caught.value.code == "trace_not_found"

    asyncio.run(run())


def test_the_health_checks(haki: HakiClient, haki_server: Server):
    assert haki.health().status == "ok"
    assert haki.health(ready=True).status == "ready"

    async def run() -> None:
        async with AsyncHakiClient(haki_server.url, "hk_unknown") as client:
            # No key is needed: an unknown one is not even read.
            assert (await client.health(ready=True)).status == "ready"

    asyncio.run(run())


# --------------------------------------------------------------------- retries and fail-open


def test_503_and_429_are_retried_with_backoff():
    script = [UNAVAILABLE, Scripted(429, {"error": {"code": "throttled", "message": "slow"}},
                                    headers={"Retry-After": "0.05"}), OK]
    with stub_server(script) as stub, HakiClient(stub.url, "hk_x", project_id="p",
                                                 backoff=0.01) as client:
        answer = client.context("s", "q")
    assert str(answer.trace_id) == "3fdb9157-2449-4afe-a59b-5c5b0c621f5a"
    assert len(stub.requests) == 3
    assert stub.requests[2][4] - stub.requests[1][4] >= 0.05  # Retry-After was honoured
    sent = [json.loads(r[3]) for r in stub.requests]
    assert sent[0] == sent[2] == {"project_id": "p", "subject_id": "s", "query": "q",
                                  "purpose": DEFAULT_PURPOSE}
    assert stub.requests[0][2]["Authorization"] == "Bearer hk_x"


def test_retries_give_up_after_max_retries():
    with stub_server([UNAVAILABLE] * 5) as stub, HakiClient(
            stub.url, "hk_x", project_id="p", max_retries=2, backoff=0.01) as client:
        error = error_of(lambda: client.inspect(uuid.uuid4(), subject_id="s"))
    assert (error.code, error.status) == ("service_unavailable", 503)
    assert isinstance(error, ServerError) and len(stub.requests) == 3


def test_throttled_after_the_retries_is_a_rate_limit_error():
    throttled = Scripted(429, {"error": {"code": "too_many_requests", "message": "slow"}})
    with stub_server([throttled] * 2) as stub, HakiClient(
            stub.url, "hk_x", project_id="p", max_retries=1, backoff=0.01) as client:
        error = error_of(lambda: client.list_facts("s"))
    assert isinstance(error, RateLimitError) and error.code == "too_many_requests"
    assert len(stub.requests) == 2


@pytest.mark.parametrize(("status", "family"), [
    (400, BadRequestError), (401, AuthenticationError), (403, PermissionDeniedError),
    (404, NotFoundError), (409, ConflictError), (413, BadRequestError), (422, ValidationError),
])
def test_4xx_is_never_retried(status: int, family: type[HakiError]):
    error = Scripted(status, {"error": {"code": f"code_{status}", "message": "no"}},
                     headers={"x-amzn-RequestId": f"req-{status}"})
    with stub_server([error, OK]) as stub, HakiClient(stub.url, "hk_x", project_id="p",
                                                      backoff=0.01, fail_open=True) as client:
        error = error_of(lambda: client.context("s", "q"))
    assert error.code == f"code_{status}" and len(stub.requests) == 1
    assert type(error) is family and error.request_id == f"req-{status}"
    assert error.message == "no" and error.status == status


def test_a_connection_error_is_retried_then_fails_open(caplog: pytest.LogCaptureFixture):
    url = closed_port_url()
    with HakiClient(url, "hk_x", project_id="p", backoff=0.01) as strict:
        error = error_of(lambda: strict.context("s", "q"))
    assert error.code == "connection_error" and error.status is None
    assert isinstance(error, APIConnectionError) and not isinstance(error, APITimeoutError)
    assert "3 attempt(s)" in error.message

    with caplog.at_level(logging.WARNING, logger="haki_client"), HakiClient(
            url, "hk_x", project_id="p", backoff=0.01, fail_open=True) as lenient:
        answer = lenient.context("s", "a query that must not be logged", render=True)
    assert not answer.served and answer.trace_id is None and answer.token_count == 0
    assert answer.packet.is_empty and answer.packet.status == "degraded"
    assert answer.packet.warnings[0].startswith("haki_unavailable: connection_error")
    assert render(answer) == ""
    assert "fail_open" in caplog.text and "must not be logged" not in caplog.text
    # Only the context call fails open: the others raise.
    with HakiClient(url, "hk_x", project_id="p", backoff=0.01, fail_open=True) as lenient:
        assert error_of(lenient.stats_overview).code == "connection_error"


def test_render_is_sent_only_when_asked():
    with stub_server([OK, OK]) as stub, HakiClient(stub.url, "hk_x", project_id="p") as client:
        client.context("s", "q")
        client.context("s", "q", render=True)
    bodies = [json.loads(body) for _, _, _, body, _ in stub.requests]
    assert "render" not in bodies[0] and bodies[1]["render"] is True


def test_5xx_fails_open_after_the_retries():
    with stub_server([UNAVAILABLE] * 3) as stub, HakiClient(
            stub.url, "hk_x", project_id="p", backoff=0.01, fail_open=True) as client:
        answer = client.context("s", "q")
    assert not answer.served and len(stub.requests) == 3


def test_a_slow_service_times_out_and_is_retried():
    slow = Scripted(200, _packet(str(uuid.uuid4())), delay_s=1.0)
    with stub_server([slow, OK]) as stub, HakiClient(
            stub.url, "hk_x", project_id="p", timeout=0.2, backoff=0.01) as client:
        answer = client.context("s", "q")
    # The answer is the retry's: the client did not wait for the slow one.
    assert answer.served and len(stub.requests) == 2
    assert str(answer.trace_id) == OK.body["trace_id"]


def test_a_call_can_set_its_own_timeout():
    slow = Scripted(200, _packet(str(uuid.uuid4())), delay_s=1.0)
    with stub_server([slow, slow]) as stub, HakiClient(
            stub.url, "hk_x", project_id="p", timeout=30.0, max_retries=1,
            backoff=0.01) as client:
        error = error_of(lambda: client.inspect(uuid.uuid4(), subject_id="s", timeout=0.2))
    assert isinstance(error, APITimeoutError) and error.code == "connection_error"
    assert "timed out after 2 attempt(s)" in error.message and len(stub.requests) == 2

    async def run() -> None:
        with stub_server([slow]) as stub:
            async with AsyncHakiClient(stub.url, "hk_x", project_id="p", timeout=30.0,
                                       max_retries=0) as client:
                with pytest.raises(APITimeoutError):
                    await client.stats_overview(timeout=0.2)

    asyncio.run(run())


def test_an_answer_that_is_not_the_apis_json_is_unexpected():
    page = Scripted(502, raw=b"<html>Bad Gateway</html>")
    with stub_server([page] * 3) as stub, HakiClient(stub.url, "hk_x", project_id="p",
                                                     backoff=0.01) as client:
        error = error_of(client.stats_overview)
    assert (error.code, error.status) == ("unexpected_response", 502)
    assert isinstance(error, UnexpectedResponseError)
    assert len(stub.requests) == 3  # 502 is retried for a read


def test_backoff_is_jittered_and_capped():
    client = HakiClient("http://127.0.0.1:1", "hk_x", backoff=0.2, max_backoff=1.0)
    policy = client._policy
    draws = [policy.delay(attempt) for attempt in range(8) for _ in range(50)]
    assert min(draws) >= 0 and max(draws) <= 1.0 and len(set(draws)) > 300
    assert all(policy.delay(0) <= 0.2 for _ in range(100))
    assert policy.delay(0, retry_after=30) == 1.0


def test_async_client_fails_open_too():
    async def run() -> None:
        async with AsyncHakiClient(closed_port_url(), "hk_x", project_id="p", backoff=0.01,
                                   fail_open=True) as client:
            answer = await client.context("s", "q", render=True)
            assert not answer.served and render(answer) == ""
        transport = httpx.MockTransport(lambda request: httpx.Response(
            503, json={"error": {"code": "service_unavailable", "message": "x"}}))
        async with httpx.AsyncClient(transport=transport) as http:
            client = AsyncHakiClient("http://haki.test", "hk_x", project_id="p", backoff=0.01,
                                     http_client=http)
            with pytest.raises(HakiError) as caught:
                await client.context("s", "q")
            assert caught.value.code == "service_unavailable"

    asyncio.run(run())


# --------------------------------------------------------------------- the write routes


def subject() -> str:
    return f"sdk-{uuid.uuid4().hex[:10]}"


def test_a_remembered_event_is_served_by_the_next_context_call(haki: HakiClient):
    who = subject()
    text = "Je serai absente du 3 au 21 mars : écrivez à Julie Martin pour la facture."
    written = haki.remember_event(who, text, idempotency_key=f"{who}-1")
    assert not written.deduplicated
    again = haki.remember_event(who, text, idempotency_key=f"{who}-1")
    assert again.id == written.id and again.deduplicated
    answer = haki.context(who, "Qui contacter pour la facture pendant son absence ?",
                          purpose="support_reply", render=True)
    assert [e.event_id for e in answer.packet.episodes] == [written.id]
    assert "Julie Martin" in render(answer)

    batch = haki.write_events([
        {"subject_id": who, "kind": "support.ticket", "payload": {"title": "Facture"}},
        EventIn(subject_id=who, kind="conversation.message", payload={"text": "Merci"}),
    ])
    assert len({e.id for e in batch.events}) == 2 and not any(e.deduplicated for e in batch.events)


def test_a_thread_round_trips_and_narrows_the_episodes(haki: HakiClient):
    who = subject()
    trip = haki.write_messages(who, [
        {"role": "user", "message_id": "t-1", "content": "Book the quiet carriage to Lyon."},
        {"role": "assistant", "message_id": "t-2", "content": "Quiet carriage to Lyon booked."},
    ], thread_id="trip-lyon")
    phone = haki.remember_event(who, "Asked about a train to Lyon by phone.", thread_id="phone")
    listed = haki.list_events(who, thread_id="trip-lyon").events
    assert [e.id for e in listed] == [e.id for e in trip.events][::-1]  # newest first
    assert {e.thread_id for e in haki.list_events(who).events} == {"trip-lyon", "phone"}
    answer = haki.context(who, "train to Lyon", thread_id="trip-lyon", render=True)
    assert [e.event_id for e in answer.packet.episodes] == [e.id for e in trip.events]
    assert phone.id not in {e.event_id for e in answer.packet.episodes}
    assert any(line.endswith(" · trip-lyon") for line in render(answer).split("\n"))


def conversation() -> list[dict | MessageIn]:
    """A turn with roles and a speaker's name, each message with an id of the caller's."""
    return [
        {"role": "user", "name": "Ana", "message_id": "m-1",
         "content": "I just moved to Porto, please send my invoices there.",
         "occurred_at": "2026-11-20T10:07:41Z"},
        MessageIn(role="assistant", message_id="m-2",
                  content="Noted: your invoices will go to your Porto address."),
    ]


def test_a_conversation_is_written_once_and_served_with_its_speakers(haki: HakiClient):
    who = subject()
    written = haki.write_messages(who, conversation())
    ids = [e.id for e in written.events]
    assert len(set(ids)) == 2 and not any(e.deduplicated for e in written.events)
    again = haki.write_messages(who, conversation())
    assert [e.id for e in again.events] == ids and all(e.deduplicated for e in again.events)

    answer = haki.context(who, "Where should Ana's invoices be sent? Porto address",
                          purpose="support_reply", budget_tokens=4000, render=True)
    speakers = {(e.event_id, e.role, e.name) for e in answer.packet.episodes}
    assert (ids[0], "user", "Ana") in speakers
    lines = render(answer).split("\n")
    said = lines.index("## 2026-11-20") + 1
    assert lines[said].endswith(" Ana: I just moved to Porto, please send my "
                                "invoices there.") and lines[said].startswith("[e")

    # The same message id for other words is refused, and nothing of the batch is written.
    reused = error_of(lambda: haki.write_messages(who, [
        {"role": "user", "message_id": "m-3", "content": "A new message."},
        {"role": "user", "message_id": "m-1", "content": "Other words."}]))
    assert isinstance(reused, ConflictError) and reused.code == "idempotency_conflict"
    assert error_of(lambda: haki.write_messages(who, [{"role": "robot", "content": "hi"}])
                    ).code == "validation_error"
    assert error_of(lambda: haki.write_messages(who, [])).code == "validation_error"
    assert error_of(lambda: haki.write_messages("", conversation())).code == "missing_scope"


def test_messages_without_an_id_are_dated_in_order_and_retried_as_sent():
    answer = {"events": [{"id": str(uuid.uuid4()), "deduplicated": True} for _ in range(3)]}
    with stub_server([Scripted(200, {}, delay_s=1.0), Scripted(201, answer)]) as stub, \
            HakiClient(stub.url, "hk_x", project_id="p", timeout=0.2, backoff=0.01) as client:
        written = client.write_messages("s", [
            {"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"},
            {"role": "user", "content": "bye", "message_id": "m-9"}])
    assert all(e.deduplicated for e in written.events) and len(stub.requests) == 2
    first, second = (json.loads(r[3]) for r in stub.requests)
    assert first == second and first["subject_id"] == "s"
    hello, hi, bye = first["messages"]
    dated = [datetime.fromisoformat(m["occurred_at"]) for m in (hello, hi)]
    assert dated[0].tzinfo is not None and dated[0] < dated[1] and "occurred_at" not in bye
    assert bye == {"role": "user", "content": "bye", "message_id": "m-9"}


def test_facts_lifecycle_conflicts_and_forget(haki: HakiClient):
    who = subject()
    created = haki.record_fact(who, "preferred_language", "fr", confidence=0.9)
    assert (created.outcome, created.status, created.version) == ("created", "active", 1)
    assert haki.record_fact(who, "preferred_language", "fr").outcome == "reinforced"
    page = haki.list_facts(who, limit=10)
    assert [f.id for f in page.facts] == [created.id] and page.facts[0].value == "fr"

    disabled = haki.set_fact_status(created.id, "disabled")
    assert disabled.fact.status == "disabled"
    assert haki.list_facts(who, status="active").facts == []
    haki.set_fact_status(created.id, "active")

    haki.forget("disable", subject_id=who)
    assert haki.list_facts(who, status="disabled").facts[0].id == created.id
    erased = haki.forget("delete", fact_id=created.id)
    assert erased.target == "fact" and erased.receipt_id is not None
    assert haki.list_facts(who).facts == []
    assert haki.forget("delete", subject_id=who).target == "subject"


def test_a_conflict_is_opened_listed_and_resolved(haki: HakiClient):
    who = subject()
    lyon = haki.record_fact(who, "lives_in", {"city": "Lyon"})
    paris = haki.record_fact(who, "lives_in", {"city": "Paris"})
    assert paris.outcome == "conflict" and paris.conflict_id is not None
    answer = haki.context(who, "Where does she live?", purpose="test")
    assert answer.packet.facts == [] and any(w.startswith("open_conflict") for w in
                                             answer.packet.warnings)
    listed = haki.list_conflicts(subject_id=who, status="open").conflicts
    assert [c.id for c in listed] == [paris.conflict_id]
    assert {f.id for f in listed[0].facts} == {lyon.id, paris.id}
    resolved = haki.resolve_conflict(paris.conflict_id, paris.id)
    assert resolved.kept_fact_id == paris.id and resolved.superseded_fact_ids == [lyon.id]
    assert haki.list_conflicts(subject_id=who, status="open").conflicts == []
    served = haki.context(who, "Where does she live?", purpose="test").packet.facts
    assert [(f.id, f.value) for f in served] == [(paris.id, {"city": "Paris"})]
    error = error_of(lambda: haki.resolve_conflict(paris.conflict_id, paris.id))
    assert error.status in (404, 409) and error.code


def test_write_errors_carry_the_stable_code(haki: HakiClient):
    assert error_of(lambda: haki.write_events([])).code == "validation_error"
    assert error_of(lambda: haki.write_events(
        [{"subject_id": "s", "kind": "k", "colour": "red"}])).code == "validation_error"
    assert error_of(lambda: haki.record_fact("", "p", "v")).code == "missing_scope"
    assert error_of(lambda: haki.record_fact("s", "p", "v", project_id=OTHER_PROJECT)).code == (
        "forbidden_scope")
    assert error_of(lambda: haki.set_fact_status(uuid.uuid4(), "disabled")).status == 404


def test_a_retried_event_batch_carries_the_same_idempotency_keys():
    written = Scripted(201, {"events": [{"id": str(uuid.uuid4()), "deduplicated": True}]})
    with stub_server([Scripted(200, {}, delay_s=1.0), written]) as stub, HakiClient(
            stub.url, "hk_x", project_id="p", timeout=0.2, backoff=0.01) as client:
        answer = client.remember_event("s", "hello")
    assert answer.deduplicated and len(stub.requests) == 2
    first, second = (json.loads(r[3]) for r in stub.requests)
    assert first == second and first["events"][0]["idempotency_key"].startswith("haki-client-")
    assert first["events"][0]["payload"] == {"text": "hello"}


def test_a_fact_write_that_may_have_run_is_not_retried():
    with stub_server([Scripted(200, {}, delay_s=1.0), OK]) as stub, HakiClient(
            stub.url, "hk_x", project_id="p", timeout=0.2, backoff=0.01) as client:
        error = error_of(lambda: client.record_fact("s", "p", "v"))
    assert error.code == "connection_error" and len(stub.requests) == 1
    with stub_server([UNAVAILABLE, Scripted(201, {"facts": [{
            "id": str(uuid.uuid4()), "outcome": "created", "status": "active",
            "version": 1}]})]) as stub, HakiClient(stub.url, "hk_x", project_id="p",
                                                   backoff=0.01) as client:
        assert client.record_fact("s", "p", "v").outcome == "created"  # 503: nothing was done
    assert len(stub.requests) == 2


def test_async_writes(haki_server: Server):
    async def run() -> None:
        async with AsyncHakiClient(haki_server.url, haki_server.key,
                                   project_id=DEMO_PROJECT) as client:
            who = subject()
            event = await client.remember_event(who, "Mon numéro client est 4242.")
            fact = await client.record_fact(who, "customer_number", 4242,
                                            source_event_ids=[event.id])
            page = await client.list_facts(who)
            assert page.facts[0].source_event_ids == [event.id] and page.facts[0].value == 4242
            assert fact.outcome == "created"
            written = await client.write_messages(who, conversation())
            again = await client.write_messages(who, conversation())
            assert [(e.id, e.deduplicated) for e in again.events] == [
                (e.id, True) for e in written.events]
            answer = await client.context(who, "Where should the invoices be sent? Porto",
                                          budget_tokens=4000, render=True)
            assert "] Ana: I just moved to Porto" in render(answer)
            assert (await client.forget("delete", subject_id=who)).counts["facts"] == 1

    asyncio.run(run())


# --------------------------------------------------------------------- the read routes


def test_a_call_is_found_opened_and_its_subject_read(haki: HakiClient):
    who, marker = subject(), f"zebra{uuid.uuid4().hex[:8]}"
    before = datetime.now(UTC) - timedelta(minutes=1)
    events = [haki.remember_event(who, f"Note {n}: invoices go to Porto.") for n in range(3)]
    fact = haki.record_fact(who, "preferred_language", "pt")
    first = haki.context(who, f"Which language for the {marker} invoice?", purpose="sdk_reads",
                         render=True)
    second = haki.context(who, f"Where do the {marker} invoices go?", purpose="other_purpose")

    found = haki.list_calls(q=marker.upper())
    assert [c.trace_id for c in found.calls] == [second.trace_id, first.trace_id]
    assert {c.subject_id for c in found.calls} == {who} and found.next_cursor is None
    only = haki.list_calls(q=marker, purpose="sdk_reads", since=before, status="ok")
    assert [(c.trace_id, c.query) for c in only.calls] == [
        (first.trace_id, f"Which language for the {marker} invoice?")]
    assert haki.list_calls(q=marker, until=before).calls == []
    assert haki.list_calls(q=marker, since=datetime.now(UTC) + timedelta(hours=1)).calls == []

    page = haki.list_calls(subject_id=who, limit=1)
    assert [c.trace_id for c in page.calls] == [second.trace_id] and page.next_cursor
    rest = haki.list_calls(subject_id=who, limit=1, cursor=page.next_cursor)
    assert [c.trace_id for c in rest.calls] == [first.trace_id]

    detail = haki.get_call(first.trace_id, subject_id=who, timeout=5.0)
    assert detail.trace.trace_id == first.trace_id and detail.trace.packet == first.packet
    assert detail.rendered == first.block and detail.texts[str(fact.id)]
    with pytest.raises(NotFoundError):
        haki.get_call(uuid.uuid4(), subject_id=who)

    listed = haki.list_events(who, limit=2)
    more = haki.list_events(who, cursor=listed.next_cursor)
    assert len(listed.events) == 2 and more.next_cursor is None
    assert {e.id for e in listed.events + more.events} == {e.id for e in events}

    series = haki.stats_series(subject_id=who, days=1, granularity="hour")
    assert (series.subject_id, series.granularity) == (who, "hour")
    assert sum(p.calls for p in series.points) == 2
    assert haki.stats_series(days=2, granularity="day").granularity == "day"


def test_since_and_until_are_sent_as_iso_8601():
    page = Scripted(200, {"calls": [], "next_cursor": None})
    moment = datetime(2026, 12, 1, 8, 30, tzinfo=UTC)
    with stub_server([page]) as stub, HakiClient(stub.url, "hk_x", project_id="p") as client:
        client.list_calls(since=moment, until="2026-12-02T00:00:00Z", warning="open_conflict")
    query = parse_qs(urlsplit(stub.requests[0][1]).query)
    assert query == {"project_id": ["p"], "since": ["2026-12-01T08:30:00+00:00"],
                     "until": ["2026-12-02T00:00:00Z"], "warning": ["open_conflict"]}
    with pytest.raises(TypeError, match="subject"):
        client.list_calls(subject="s")  # type: ignore[call-arg]


def test_another_projects_key_reads_none_of_it(haki: HakiClient, haki_server: Server,
                                               clients_data_dir: Path):
    answer = haki.context(DEMO_SUBJECT, QUERY)
    key, _ = create_key(clients_data_dir, "elsewhere", "sdk-reads-other", "--create-project")
    with HakiClient(haki_server.url, key, project_id=DEMO_PROJECT) as other:
        for read in (lambda: other.list_calls(subject_id=DEMO_SUBJECT),
                     lambda: other.get_call(answer.trace_id, subject_id=DEMO_SUBJECT),
                     lambda: other.stats_series(),
                     lambda: other.list_events(DEMO_SUBJECT)):
            error = error_of(read)
            assert isinstance(error, PermissionDeniedError)
            assert (error.code, error.status) == ("forbidden_scope", 403)
        own = "sdk-reads-other"
        assert other.list_calls(project_id=own, q="Marie").calls == []
        assert other.list_events(DEMO_SUBJECT, project_id=own).events == []
        with pytest.raises(NotFoundError):
            other.get_call(answer.trace_id, subject_id=DEMO_SUBJECT, project_id=own)


def test_async_reads(haki_server: Server):
    async def reads(client: AsyncHakiClient) -> None:
        who = subject()
        event = await client.remember_event(who, "Call me after 6 pm.")
        answer = await client.context(who, "When can I call?", render=True)
        calls, detail, events, series = await asyncio.gather(
            client.list_calls(subject_id=who),
            client.get_call(answer.trace_id, subject_id=who),
            client.list_events(who),
            client.stats_series(subject_id=who, granularity="day"))
        assert [c.trace_id for c in calls.calls] == [answer.trace_id]
        assert detail.rendered == answer.block
        assert [e.id for e in events.events] == [event.id]
        assert sum(p.calls for p in series.points) == 1
        with pytest.raises(PermissionDeniedError):
            await client.list_calls(project_id=OTHER_PROJECT)

    with_async_client(haki_server, reads)


def with_async_client(haki_server: Server,
                      body: Callable[[AsyncHakiClient], Awaitable[None]]) -> None:
    async def run() -> None:
        async with AsyncHakiClient(haki_server.url, haki_server.key,
                                   project_id=DEMO_PROJECT) as client:
            await body(client)

    asyncio.run(run())


# --------------------------------------------------------------------- the caller's mistakes


@pytest.mark.parametrize("budget", [0, -5, "900", 1.5, True, 100_001])
def test_a_bad_budget_is_refused_before_any_request(budget: object):
    # A closed port: a request made would be a connection error, not this one.
    with HakiClient(closed_port_url(), "hk_x", max_retries=0) as client:
        error = error_of(lambda: client.context("s", "q", budget_tokens=budget))  # type: ignore[arg-type]
    assert isinstance(error, ValidationError) and error.code == "validation_error"
    assert "budget_tokens must be a whole number of tokens from 1 to 100,000" in error.message
    assert repr(budget) in error.message and error.status is None


def test_an_unknown_keyword_of_a_fact_is_named():
    with HakiClient(closed_port_url(), "hk_x", max_retries=0) as client:
        error = error_of(lambda: client.record_fact("s", "p", "v", confidnce=0.9))
        wrong = error_of(lambda: client.record_fact("s", "p", "v", volatility="sometimes"))
    assert error.code == "validation_error"
    assert error.message == ("not a FactIn: unknown field 'confidnce' "
                             "(did you mean 'confidence'?)")
    assert wrong.message.startswith("not a FactIn: field 'volatility': Input should be")


def test_an_empty_api_key_is_an_error_not_the_environments(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("HAKI_API_KEY", "hk_" + "E" * 43)
    for empty in ("", "  "):
        with pytest.raises(ConfigurationError, match="api_key is empty"):
            HakiClient("http://127.0.0.1:1", empty)
        with pytest.raises(ConfigurationError, match="api_key is empty"):
            AsyncHakiClient("http://127.0.0.1:1", empty)


def test_the_literal_parameters_are_typed():
    def options(function: object, name: str) -> set[str]:
        """The values a ``Literal[...]`` (or ``Literal[...] | None``) parameter admits."""
        hint = typing.get_type_hints(function)[name]
        arms = typing.get_args(hint) if typing.get_origin(hint) is typing.Union else (hint,)
        return {value for arm in arms for value in typing.get_args(arm)}

    for cls in (HakiClient, AsyncHakiClient):
        assert options(cls.forget, "mode") == {"disable", "enable", "delete"}
        assert options(cls.list_facts, "status") == {
            "candidate", "active", "superseded", "disputed", "disabled", "deleted"}
        assert options(cls.set_fact_status, "status") == {
            "candidate", "active", "superseded", "disputed", "disabled", "deleted"}
        assert options(cls.list_conflicts, "status") == {"open", "resolved"}


# --------------------------------------------------------------------- a key's own project


def test_a_client_without_project_id_works_in_its_keys_project(haki_server: Server,
                                                               clients_data_dir: Path):
    project = f"sdk-own-{uuid.uuid4().hex[:8]}"
    key, _ = create_key(clients_data_dir, "own", project, "--create-project")
    with HakiClient(haki_server.url, key) as client:
        assert client.list_subjects().subjects == []
        for who in ("carol", "alice", "bob"):
            client.record_fact(who, "preferred_language", "fr", confidence=0.95)
        client.remember_event("alice", "Bonjour", idempotency_key="alice-hello")
        answer = client.context("alice", "Which language does she speak?")
        assert answer.served and answer.packet.facts[0].confidence == 0.95
        # Trace ids are unique: inspect needs no subject.
        trace = client.inspect(answer.trace_id)
        assert (trace.project_id, trace.subject_id) == (project, "alice")
        assert client.get_call(answer.trace_id).trace.trace_id == answer.trace_id
        assert client.list_facts("alice").facts[0].confidence == 0.95
        first = client.list_subjects(limit=2)
        assert [(s.subject_id, s.facts, s.events) for s in first.subjects] == [
            ("alice", 1, 1), ("bob", 1, 0)]
        rest = client.list_subjects(cursor=first.next_cursor)
        assert [s.subject_id for s in rest.subjects] == ["carol"] and rest.next_cursor is None

    async def run() -> None:
        async with AsyncHakiClient(haki_server.url, key) as client:
            page = await client.list_subjects()
            assert [s.subject_id for s in page.subjects] == ["alice", "bob", "carol"]
            facts = await client.list_facts("bob", status="active")
            assert facts.facts[0].confidence == 0.95

    asyncio.run(run())
