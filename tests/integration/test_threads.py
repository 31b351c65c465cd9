"""Threads and the order of a conversation, against the real database: a thread round-trips
through writes, ``GET /v1/events`` and the context call, which narrows its episodes to it
(facts stay subject-wide); the messages of one batch keep their order wherever they are read,
though they share one time."""

import re
from datetime import UTC, datetime
from typing import Any

import pytest

from haki.assembler import DEFAULT_CONFIG, assemble
from haki.assembler.render import render_packet
from haki.db.connection import acting_for
from haki.errors import IdempotencyConflict, ValidationFailed
from haki.memory.api import EventsRequest, EventsResponse
from haki.memory.episodes import EventListRequest, EventPage, list_events
from haki.memory.events import ingest_events
from haki.memory.pagination import encode_cursor
from haki.models import ContextRequest
from haki.validation import parse
from tests.integration.conftest import NOW, Writes

CONVERSATION = [
    ("user", "My train to Lyon leaves at nine, can you book a quiet carriage?"),
    ("assistant", "Booked: quiet carriage on the nine o'clock train to Lyon."),
    ("user", "And a window seat on that train, please."),
    ("assistant", "Done: window seat, quiet carriage, train to Lyon at nine."),
]


def say(writes: Writes, turns: list[tuple[str, str]], **batch: Any) -> EventsResponse:
    """One batch of messages of alice, with no times: they all get the write's time."""
    body = {"project_id": writes.project_id, "subject_id": "alice", **batch,
            "messages": [{"role": role, "content": text,
                          "message_id": f"{batch.get('thread_id')}-{n}"}
                         for n, (role, text) in enumerate(turns)]}
    with acting_for(writes.key_hash):
        return ingest_events(writes.db, writes.embedder, writes.project_id,
                             parse(EventsRequest, body))


def listing(writes: Writes, **query: Any) -> EventPage:
    body = {"project_id": writes.project_id, "subject_id": "alice", **query}
    with acting_for(writes.key_hash):
        return list_events(writes.db, writes.project_id, parse(EventListRequest, body))


def context(writes: Writes, query: str, **request: Any) -> tuple[list[str], str]:
    """The texts of the episodes served, in packet order, and the block."""
    context = ContextRequest(project_id=writes.project_id, subject_id="alice", query=query,
                             purpose="test", budget_tokens=2000, **request)
    with acting_for(writes.key_hash):
        answer = assemble(context, lambda: writes.embedder.embed_query(query), db=writes.db,
                          config=DEFAULT_CONFIG).response
    return [e.excerpt for e in answer.packet.episodes], render_packet(answer.packet)


def test_a_batch_reads_back_in_the_order_it_was_said(writes: Writes) -> None:
    written = say(writes, CONVERSATION)
    ids = [e.id for e in written.events]
    times = {writes.row("events", i)["occurred_at"] for i in ids}
    assert len(times) == 1, "one batch, one time: only the written order tells them apart"
    # Newest first, page by page, one at a time: never skipped, never twice.
    seen, cursor = [], None
    while True:
        page = listing(writes, limit=1, **({"cursor": cursor} if cursor else {}))
        seen += [e.id for e in page.events]
        if (cursor := page.next_cursor) is None:
            break
    assert seen == ids[::-1]
    served, block = context(writes, "train to Lyon quiet carriage window seat")
    assert served == [text for _, text in CONVERSATION]
    header, *lines = block.split("\n")[1:-1]
    assert re.fullmatch(r"## \d{4}-\d{2}-\d{2}", header)
    assert lines == [
        f"[e{n}] {role}: {text}" for n, (role, text) in enumerate(CONVERSATION, start=1)]


def test_a_thread_round_trips_and_narrows_the_episodes_not_the_facts(writes: Writes) -> None:
    writes.fact("home_station", "Lyon Part-Dieu")
    trip = say(writes, CONVERSATION[:2], thread_id="trip-lyon")
    other = say(writes, [("user", "Book me a train to Lyon for the conference too.")],
                thread_id="conference")
    loose = writes.events({"payload": {"text": "Asked about trains to Lyon by phone."}})
    assert writes.row("events", trip.events[0].id)["thread_id"] == "trip-lyon"
    assert writes.row("events", loose.events[0].id)["thread_id"] is None

    assert [e.id for e in listing(writes, thread_id="trip-lyon").events] == \
        [e.id for e in trip.events][::-1]
    assert {e.thread_id for e in listing(writes).events} == {"trip-lyon", "conference", None}
    assert listing(writes, thread_id="nowhere").events == []

    everything, _ = context(writes, "train to Lyon")
    assert len(everything) == 4
    narrowed, block = context(writes, "train to Lyon", thread_id="trip-lyon")
    assert narrowed == [text for _, text in CONVERSATION[:2]]
    assert f"## {datetime.now(UTC).date().isoformat()} · trip-lyon" in block.split("\n")
    assert "[f1] home station: Lyon Part-Dieu" in block.split("\n"), "facts stay subject-wide"
    assert [e.id for e in listing(writes, thread_id="conference").events] == \
        [other.events[0].id]


def test_an_event_names_its_thread_and_a_replay_must_repeat_it(writes: Writes) -> None:
    first = writes.events({"payload": {"text": "hello"}, "thread_id": "t-1",
                           "idempotency_key": "k-1"})
    again = writes.events({"payload": {"text": "hello"}, "thread_id": "t-1",
                           "idempotency_key": "k-1"})
    assert again.events[0].deduplicated and again.events[0].id == first.events[0].id
    with pytest.raises(IdempotencyConflict):
        writes.events({"payload": {"text": "hello"}, "thread_id": "t-2",
                       "idempotency_key": "k-1"})


def test_a_thread_follows_the_rules_of_a_subject_id(writes: Writes) -> None:
    for bad in ("", "x" * 129, "tab\there"):
        with pytest.raises(ValidationFailed, match="thread_id"):
            say(writes, CONVERSATION[:1], thread_id=bad)
    with pytest.raises(ValidationFailed, match="thread_id goes with messages"):
        parse(EventsRequest, {"project_id": writes.project_id, "thread_id": "t", "events": [
            {"subject_id": "alice", "kind": "k"}]})


def test_a_cursor_of_another_listing_is_refused(writes: Writes) -> None:
    say(writes, CONVERSATION)
    foreign = encode_cursor(NOW, writes.fact("a", "b").id)  # a facts cursor: (time, id)
    with pytest.raises(ValidationFailed, match="field 'cursor'"):
        listing(writes, cursor=foreign)
