"""Conversations over real HTTP against ``haki serve``: a list of messages with roles and
speaker names written in one call (``POST /v1/events`` ``messages``), idempotent per message,
refused whole like any batch; and the rendered block that says who said what, and when.

The tests write in a project of their own, each in a subject of its own."""

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from haki.memory.api import MESSAGE_KIND
from tests.e2e.conftest import Client, Reply, Server, create_key

TURN = [
    {"role": "user", "name": "Ana", "message_id": "m-1",
     "content": "I just moved to Porto and I need my invoices sent there.",
     "occurred_at": "2026-11-20T12:07:41.123456+02:00"},
    {"role": "assistant", "message_id": "m-2",
     "content": "Noted: invoices will go to your Porto address from now on.",
     "occurred_at": "2026-11-20T10:08:02Z"},
    {"role": "tool", "name": "crm_update", "message_id": "m-3",
     "content": "billing address of Ana set to Porto", "occurred_at": "2026-11-20T10:08:03Z"},
]


class Conversation:
    """A project of its own, and the calls the tests make in it."""

    def __init__(self, client: Client, project: str, key: str) -> None:
        self.client, self.project, self.key = client, project, key

    def post(self, path: str, body: dict[str, Any]) -> Reply:
        return self.client.request("POST", path, key=self.key,
                                   body={"project_id": self.project, **body})

    def messages(self, subject: str, *messages: dict[str, Any]) -> Reply:
        return self.post("/v1/events", {"subject_id": subject, "messages": list(messages)})

    def block(self, subject: str, query: str) -> tuple[dict[str, Any], list[str]]:
        reply = self.post("/v1/context", {"subject_id": subject, "query": query,
                                          "purpose": "e2e", "budget_tokens": 4000,
                                          "render": True})
        assert reply.status == 200, reply.json
        return reply.json["packet"], reply.json["block"].split("\n")


@pytest.fixture(scope="module")
def tenant(client: Client, data_dir: Path, server: Server) -> Conversation:
    project = f"e2e-talk-{uuid.uuid4().hex[:8]}"
    return Conversation(client, project,
                        create_key(data_dir, "e2e", project, "--create-project")[0])


@pytest.fixture
def subject() -> str:
    return f"subject-{uuid.uuid4().hex[:10]}"


Rows = Callable[[str], list[tuple[str, str, dict[str, Any]]]]


@pytest.fixture
def stored(owner: psycopg.Connection, tenant: Conversation) -> Rows:
    """A subject's stored events, as (id, kind, payload), in time order."""
    def rows(subject: str) -> list[tuple[str, str, dict[str, Any]]]:
        return [(str(r[0]), r[1], r[2]) for r in owner.execute(
            "SELECT id, kind, payload FROM events WHERE project_id = %s AND subject_id = %s "
            "ORDER BY occurred_at, id", (tenant.project, subject)).fetchall()]
    return rows


def _error(reply: Reply) -> tuple[int, str, str]:
    assert set(reply.json) == {"error"}, reply.json
    return reply.status, reply.json["error"]["code"], reply.json["error"]["message"]


def test_a_list_of_messages_is_stored_with_roles_and_names(
    tenant: Conversation, subject: str, stored: Rows
) -> None:
    reply = tenant.messages(subject, *TURN)
    assert reply.status == 201, reply.json
    written = reply.json["events"]
    assert [w["deduplicated"] for w in written] == [False, False, False]
    assert len({w["id"] for w in written}) == 3
    assert stored(subject) == [
        (written[0]["id"], MESSAGE_KIND,
         {"role": "user", "name": "Ana", "text": TURN[0]["content"]}),
        (written[1]["id"], MESSAGE_KIND, {"role": "assistant", "text": TURN[1]["content"]}),
        (written[2]["id"], MESSAGE_KIND,
         {"role": "tool", "name": "crm_update", "text": TURN[2]["content"]}),
    ]


def test_the_block_says_who_said_what_and_when_to_the_minute(
    tenant: Conversation, subject: str
) -> None:
    assert tenant.messages(subject, *TURN).status == 201
    ticket = tenant.post("/v1/events", {"events": [{
        "subject_id": subject, "kind": "support.ticket", "occurred_at": "2026-11-19T08:30:00Z",
        "payload": {"title": "Invoices sent to the old address", "status": "open",
                    "tags": ["billing", "address"]}}]})
    assert ticket.status == 201
    packet, block = tenant.block(subject, "Where should Ana's invoices be sent? Porto address")
    assert {(e["role"], e["name"]) for e in packet["episodes"]} == {
        ("user", "Ana"), ("assistant", None), ("tool", "crm_update"), (None, None)}
    # By day, each day's turns in the order they were said, each line with its handle.
    assert block[len(packet["facts"]) + 1:-1] == [
        "## 2026-11-19",
        "[e1] status: open; tags: (billing, address); "
        "title: Invoices sent to the old address",
        "## 2026-11-20",
        f"[e2] Ana: {TURN[0]['content']}",
        f"[e3] assistant: {TURN[1]['content']}",
        f"[e4] tool (crm_update): {TURN[2]['content']}",
    ]


def test_a_retried_call_stores_nothing_new_and_answers_the_same_ids(
    tenant: Conversation, subject: str, stored: Rows
) -> None:
    turn = [*TURN, {"role": "user", "id": str(uuid.uuid4()), "content": "Thanks!"},
            {"role": "user", "content": "ok", "occurred_at": "2026-11-20T10:09:00Z"}]
    first = tenant.messages(subject, *turn)
    assert first.status == 201, first.json
    retry = tenant.messages(subject, *turn)
    assert retry.status == 201
    assert [w["id"] for w in retry.json["events"]] == [w["id"] for w in first.json["events"]]
    assert all(w["deduplicated"] for w in retry.json["events"])
    assert len(stored(subject)) == len(turn)
    # The same words said again at another moment are another message.
    again = tenant.messages(subject, {**turn[-1], "occurred_at": "2026-11-20T10:10:00Z"})
    assert again.json["events"][0]["deduplicated"] is False
    assert len(stored(subject)) == len(turn) + 1


def test_a_client_message_id_belongs_to_its_subject(
    tenant: Conversation, subject: str, stored: Rows
) -> None:
    other = f"{subject}-other"
    one = tenant.messages(subject, TURN[1]).json["events"][0]
    two = tenant.messages(other, TURN[1]).json["events"][0]
    assert one["id"] != two["id"] and not two["deduplicated"]
    assert len(stored(subject)) == 1 and len(stored(other)) == 1


def test_a_mixed_batch_is_written_whole_or_not_at_all(
    tenant: Conversation, subject: str, stored: Rows
) -> None:
    assert tenant.messages(subject, TURN[0]).status == 201
    new = {"role": "user", "message_id": "m-9", "content": "Also change my phone number."}
    # A replay, a new message and an invalid one: refused whole, naming the record.
    invalid = tenant.messages(subject, TURN[0], new, {"role": "bot", "message_id": "m-10",
                                                      "content": "hi"})
    status, code, message = _error(invalid)
    assert (status, code) == (422, "validation_error")
    assert message.startswith("messages[2]: field 'role'"), message
    # A replay that changes what was said: the whole batch is refused, the new one unwritten.
    changed = tenant.messages(subject, new, {**TURN[0], "content": "I moved to Lisbon."})
    status, code, message = _error(changed)
    assert (status, code) == (409, "idempotency_conflict")
    assert message.startswith("messages[1]: field 'message_id'"), message
    assert len(stored(subject)) == 1
    # The same replay beside the new message: the replay answers its id, the new one is stored.
    mixed = tenant.messages(subject, TURN[0], new)
    assert mixed.status == 201
    assert [w["deduplicated"] for w in mixed.json["events"]] == [True, False]
    assert len(stored(subject)) == 2


@pytest.mark.parametrize(("body", "expected"), [
    ({"messages": [TURN[1]]}, ("missing_scope", "field 'subject_id'")),
    ({"subject_id": "s", "messages": [{"role": "user", "content": "no identity"}]},
     ("validation_error", "messages[0]: field '(record)'")),
    ({"subject_id": "s", "messages": [{**TURN[1], "id": str(uuid.uuid4())}]},
     ("validation_error", "messages[0]: field '(record)'")),
    ({"subject_id": "s", "messages": [{**TURN[1], "name": "Ana\n"}]},
     ("validation_error", "messages[0]: field 'name'")),
    ({"subject_id": "s", "messages": [{**TURN[1], "content": ""}]},
     ("validation_error", "messages[0]: field 'content'")),
    ({"subject_id": "s", "messages": [{**TURN[1], "occurred_at": "10:08"}]},
     ("validation_error", "messages[0]: field 'occurred_at'")),
    ({"subject_id": "s", "messages": []}, ("validation_error", "field 'messages'")),
    ({"subject_id": "s", "messages": [TURN[1]],
      "events": [{"subject_id": "s", "kind": "k"}]}, ("validation_error", "")),
    ({"subject_id": "s", "events": [{"subject_id": "s", "kind": "k"}]},
     ("validation_error", "")),
])
def test_a_malformed_conversation_is_refused_with_a_stable_code(
    tenant: Conversation, body: dict[str, Any], expected: tuple[str, str]
) -> None:
    status, code, message = _error(tenant.post("/v1/events", body))
    assert (status, code) == (422, expected[0])
    assert message.startswith(expected[1]), message
