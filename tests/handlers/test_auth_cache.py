"""The per-container cache of authenticated keys (``haki.keys.IdentityCache``):
a repeat caller's request costs no lookup round trip, and a key revoked while cached is still
refused at once — 401 on every route, nothing written — because every transaction checks the
key in its own first round trip."""

import uuid
from typing import Any

import pytest

from haki.db import Database
from haki.keys import IdentityCache, KeyIdentity, hash_key
from haki.models import FactRecord
from haki_aws.auth import identity_cache
from haki_aws.routes import ROUTES
from haki_local.admin import create_key, list_keys, revoke_key
from haki_local.protocol import count_protocol
from tests.handlers.conftest import Answer, Invoke, query_parameters


def _identity(n: int) -> KeyIdentity:
    return KeyIdentity(key_id=uuid.uuid4(), org_id="o", project_id=f"p{n}", key_hash=f"h{n}")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_an_entry_lives_for_its_ttl_only() -> None:
    clock = Clock()
    cache = IdentityCache(60.0, clock=clock)
    identity = _identity(1)
    cache.put(identity)
    clock.now += 59.9
    assert cache.get("h1") == identity
    clock.now += 0.2
    assert cache.get("h1") is None and len(cache) == 0


def test_the_least_recently_used_entry_goes_first() -> None:
    cache = IdentityCache(60.0, max_entries=2, clock=Clock())
    for n in (1, 2):
        cache.put(_identity(n))
    assert cache.get("h1") is not None  # 1 is now the most recent
    cache.put(_identity(3))
    assert cache.get("h2") is None
    assert cache.get("h1") is not None and cache.get("h3") is not None


def test_a_ttl_of_zero_caches_nothing() -> None:
    cache = IdentityCache(0.0, clock=Clock())
    cache.put(_identity(1))
    assert cache.get("h1") is None and len(cache) == 0


def _valid_request(route: Any, project_id: str, trace_id: str) -> dict[str, Any]:
    """A request each route accepts from a live key of ``project_id``."""
    scope = {"project_id": project_id, "subject_id": "alice"}
    path_params = {"trace_id": trace_id, "fact_id": str(uuid.uuid4()),
                   "conflict_id": str(uuid.uuid4())}
    bodies: dict[tuple[str, str], Any] = {
        ("POST", "/v1/context"): {**scope, "query": "Where does she live?"},
        ("POST", "/v1/events"): {"project_id": project_id, "events": [
            {"subject_id": "alice", "kind": "note", "payload": {"text": "hello"}}]},
        ("POST", "/v1/facts"): {"project_id": project_id, "facts": [
            {"subject_id": "alice", "predicate": "city", "value": "Lyon"}]},
        ("POST", "/v1/facts/{fact_id}/status"): {"project_id": project_id,
                                                 "status": "disabled"},
        ("POST", "/v1/conflicts/{conflict_id}/resolve"): {
            "project_id": project_id, "keep_fact_id": str(uuid.uuid4())},
        ("POST", "/v1/forget"): {**scope, "mode": "delete"},
        ("POST", "/v1/calls/{trace_id}/feedback"): {**scope, "verdict": "helpful"},
    }
    event: dict[str, Any] = {
        "path_params": {k: v for k, v in path_params.items() if "{" + k + "}" in route.path}
        or None}
    if route.method == "GET":
        takes = query_parameters(route.method, route.path)
        event["query"] = {name: value for name, value in scope.items() if name in takes}
    else:
        event["body"] = bodies[(route.method, route.path)]
    return event


def _code(answer: Answer) -> tuple[int, str | None]:
    return answer.status, (answer.json.get("error") or {}).get("code")


@pytest.mark.parametrize("route", [r for r in ROUTES if not r.public],
                         ids=lambda r: f"{r.method} {r.path}")
def test_a_key_revoked_while_cached_is_refused_at_once_on_every_route(
    invoke: Invoke, owner_db: Database, project_id: str, seeded: list[FactRecord], route: Any,
) -> None:
    key = create_key(owner_db, org_id="org-test", project_id=project_id, label="cached",
                     create_project=True).key
    first = invoke("context", "POST", "/v1/context", key=key, body={
        "project_id": project_id, "subject_id": "alice", "query": "Where does she live?"})
    assert first.status == 200
    assert identity_cache().get(hash_key(key)) is not None, "the first call should cache the key"
    (info,) = [k for k in list_keys(owner_db, project_id=project_id) if k.label == "cached"]
    revoke_key(owner_db, info.id)
    with owner_db.transaction() as conn:
        before = _row_counts(conn, project_id)
    answer = invoke(route.function, route.method, route.path, key=key,
                    **_valid_request(route, project_id, first.json["trace_id"]))
    assert _code(answer) == (401, "unauthorized")
    with owner_db.transaction() as conn:
        assert _row_counts(conn, project_id) == before


def _row_counts(conn: Any, project_id: str) -> tuple[int, ...]:
    row = conn.execute(
        "SELECT (SELECT count(*) FROM facts WHERE project_id = %(p)s),"
        "       (SELECT count(*) FROM events WHERE project_id = %(p)s),"
        "       (SELECT count(*) FROM context_calls WHERE project_id = %(p)s),"
        "       (SELECT count(*) FROM facts WHERE project_id = %(p)s AND status <> 'active'),"
        "       (SELECT count(*) FROM call_feedback WHERE project_id = %(p)s)",
        {"p": project_id}).fetchone()
    return tuple(row)


def test_a_cached_key_saves_the_lookup_round_trip(
    invoke: Invoke, handler_db: Database, api_key: str, project_id: str,
    seeded: list[FactRecord],
) -> None:
    body = {"project_id": project_id, "subject_id": "alice", "query": "Where does she live?"}
    identity_cache.cache_clear()  # an empty cache, as in a fresh container
    with count_protocol(handler_db.connection()) as cold:
        assert invoke("context", "POST", "/v1/context", key=api_key, body=body).status == 200
    with count_protocol(handler_db.connection()) as warm:
        assert invoke("context", "POST", "/v1/context", key=api_key, body=body).status == 200
    assert cold.round_trips == warm.round_trips + 1
    assert warm.round_trips <= 3
