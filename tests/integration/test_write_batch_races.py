"""Concurrent batches of events that hold the same events in different orders, over the real
database: each writer inserts in one order (the events' ids and keys, sorted), so no two wait
for each other in a cycle. No deadlock (no 503), every event stored once, every answer names
the stored ids, exactly one writer stored each event.

``HAKI_RACE_BATCHES`` sets the number of batches (160 by default: 20 rounds of 8 writers;
500 in the figures of docs/security.md)."""

import itertools
import os
import random
import threading
import uuid
from collections.abc import Callable
from typing import Any

from haki.db import Database, Role
from haki.embedding import Embedder
from haki.memory.api import EventsRequest, EventsResponse
from haki.memory.events import ingest_events
from haki.validation import parse
from tests.conftest import concurrently
from tests.integration.conftest import Writes

WRITERS = 8
BATCHES = int(os.environ.get("HAKI_RACE_BATCHES", "160"))
EVENTS = 10


def _events(round_: int) -> list[dict[str, Any]]:
    """Half the events identified by id, half by idempotency key."""
    return [{"subject_id": f"racer-{round_ % 3}", "kind": "note",
             "payload": {"text": f"note {i} of round {round_}"},
             **({"id": str(uuid.uuid4())} if i % 2 else {"idempotency_key": f"r{round_}-{i}"})}
            for i in range(EVENTS)]


Racer = tuple[list[int], EventsRequest]


def _writer(handles: list[Database], embedder: Embedder, project_id: str,
            requests: list[Racer]) -> Callable[[], tuple[list[int], EventsResponse]]:
    """A call for :func:`concurrently`: each thread takes the next request and handle."""
    turn = itertools.count()
    lock = threading.Lock()

    def write() -> tuple[list[int], EventsResponse]:
        with lock:
            mine = next(turn)
        order, request = requests[mine]
        return order, ingest_events(handles[mine], embedder, project_id, request)

    return write


def test_batches_racing_in_opposite_orders_never_deadlock(
    db_urls: dict[Role, str], writes: Writes, embedder: Embedder
) -> None:
    shuffler = random.Random(40)
    rounds = max(1, BATCHES // WRITERS)
    handles = [Database(db_urls[Role.APP]) for _ in range(WRITERS)]
    try:
        for round_ in range(rounds):
            events = _events(round_)
            requests: list[Racer] = []
            for _ in range(WRITERS):
                order = shuffler.sample(range(EVENTS), EVENTS)
                requests.append((order, parse(EventsRequest, {
                    "project_id": writes.project_id, "events": [events[i] for i in order]})))
            answers = concurrently(_writer(handles, embedder, writes.project_id, requests),
                                   WRITERS)  # raises a writer's 503, if any
            ids: dict[int, set[uuid.UUID]] = {i: set() for i in range(EVENTS)}
            stored_by: dict[int, int] = dict.fromkeys(range(EVENTS), 0)
            for order, answer in answers:
                for index, written in zip(order, answer.events, strict=True):
                    ids[index].add(written.id)
                    stored_by[index] += not written.deduplicated
            assert all(len(named) == 1 for named in ids.values()), ids
            assert set(stored_by.values()) == {1}, stored_by
        assert writes.count("events") == rounds * EVENTS
    finally:
        for handle in handles:
            handle.close()
