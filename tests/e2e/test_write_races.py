"""Concurrent writes over HTTP that race in the database, not in the local server.

One ``haki serve`` dispatches one request at a time (like one Lambda container), so two
replays sent to it never overlap. Here two server processes share one data folder (one
embedded PostgreSQL), as two Lambda containers share the database: the same batch sent to
both at once must store each event once, and two writers of one (subject, predicate) must
never both find "no active fact".
"""

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from haki.db import Role
from haki.db.connection import connect
from haki.roles import DATABASE_NAME
from haki_local.embedded import embedded_role_url, start_embedded
from tests.e2e.conftest import Client, Reply, Server, create_key, serving

ROUNDS = 5


@pytest.fixture(scope="module")
def pair(server_data_dir: Callable[[str], Path]) -> Iterator[tuple[Path, Server, Server]]:
    data_dir = server_data_dir("test-e2e-races-")
    with serving(data_dir, "--no-demo") as first, serving(data_dir, "--no-demo") as second:
        yield data_dir, first, second


@pytest.fixture(scope="module")
def key(pair: tuple[Path, Server, Server]) -> str:
    return create_key(pair[0], "race", "race", "--create-project")[0]


@pytest.fixture(scope="module")
def owner(pair: tuple[Path, Server, Server]) -> Iterator[psycopg.Connection]:
    with connect(embedded_role_url(start_embedded(pair[0]), Role.OWNER, DATABASE_NAME)) as conn:
        yield conn


def _at_once(calls: list[Callable[[], Reply]]) -> list[Reply]:
    """Run the calls in threads released together; their replies in order. The requests
    were in flight together (each started before the other ended): else it is no race."""
    barrier = threading.Barrier(len(calls))
    replies: list[Any] = [None] * len(calls)
    spans: list[tuple[float, float]] = [(0.0, 0.0)] * len(calls)

    def run(i: int) -> None:
        barrier.wait()
        started = time.monotonic()
        replies[i] = calls[i]()
        spans[i] = (started, time.monotonic())

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert max(start for start, _ in spans) < min(end for _, end in spans), spans
    return replies


def test_two_servers_share_one_database(pair: tuple[Path, Server, Server]) -> None:
    _, first, second = pair
    assert first.url != second.url and first.key == second.key


def test_the_same_batch_replayed_on_two_servers_at_once_is_stored_once(
    pair: tuple[Path, Server, Server], key: str, owner: psycopg.Connection
) -> None:
    _, first, second = pair
    clients = [Client(first.url), Client(second.url)]
    for round_ in range(ROUNDS):
        subject = f"racer-{round_}-{uuid.uuid4().hex[:6]}"
        events = [{"subject_id": subject, "kind": "message", "idempotency_key": f"{subject}-{i}",
                   "payload": {"text": f"message {i} of round {round_}"}} for i in range(10)]
        body = {"project_id": "race", "events": events}
        replies = _at_once([lambda c=c, b=body: c.request("POST", "/v1/events", key=key, body=b)
                            for c in clients])
        assert [r.status for r in replies] == [201, 201], [r.json for r in replies]
        a, b = (r.json["events"] for r in replies)
        assert [e["id"] for e in a] == [e["id"] for e in b]  # the same ids on both
        for x, y in zip(a, b, strict=True):
            assert sorted([x["deduplicated"], y["deduplicated"]]) == [False, True]
        stored = owner.execute(
            "SELECT count(*), count(DISTINCT idempotency_key) FROM events "
            "WHERE project_id = 'race' AND subject_id = %s", (subject,)).fetchone()
        assert stored == (10, 10)


@pytest.mark.parametrize("values", [("same", "same"), ("one", "other")])
def test_two_writers_of_one_key_on_two_servers_never_both_create(
    pair: tuple[Path, Server, Server], key: str, owner: psycopg.Connection,
    values: tuple[str, str],
) -> None:
    _, first, second = pair
    clients = [Client(first.url), Client(second.url)]
    expected = ["created", "reinforced"] if values[0] == values[1] else ["conflict", "created"]
    for round_ in range(ROUNDS):
        subject = f"writer-{round_}-{uuid.uuid4().hex[:6]}"
        bodies = [{"project_id": "race", "facts": [
            {"subject_id": subject, "predicate": "city", "value": value}]} for value in values]
        replies = _at_once([lambda c=c, b=b: c.request("POST", "/v1/facts", key=key, body=b)
                            for c, b in zip(clients, bodies, strict=True)])
        assert [r.status for r in replies] == [201, 201], [r.json for r in replies]
        outcomes = sorted(r.json["facts"][0]["outcome"] for r in replies)
        assert outcomes == expected
        active, sets = owner.execute(
            "SELECT (SELECT count(*) FROM facts WHERE project_id = 'race' AND subject_id = %(s)s"
            "        AND status = 'active'),"
            "       (SELECT count(*) FROM conflict_sets WHERE project_id = 'race'"
            "        AND subject_id = %(s)s AND status = 'open')", {"s": subject}).fetchone()
        assert (active, sets) == ((1, 0) if values[0] == values[1] else (2, 1))
