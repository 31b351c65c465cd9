"""Fuzzing from the committed OpenAPI document (schemathesis) against the local server, every
route: no response is a 5xx, every status is one the document lists for the route, and every
response conforms to its schema and content type. Then times at the edges of the accepted
range (1970 and 9999, offsets up to ±14:00) on every write route that takes one (Hypothesis):
each is stored (and the subject still answers) or refused with 422, never a 5xx. A short run
here; ``make fuzz`` runs ≥ 10,000 cases (``HAKI_FUZZ_EXAMPLES`` examples per operation, and as
many per time route).

Left out: ``positive_data_acceptance`` (a request the schema admits must succeed). Some rules
span fields and JSON Schema cannot state them (an event names ``id`` or ``idempotency_key``,
not both); those requests get a documented 422, which the status check holds to."""

import os
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.specs.openapi.checks import positive_data_acceptance

from tests.e2e.conftest import Client, Server, create_key

ROOT = Path(__file__).resolve().parents[2]
schema = schemathesis.openapi.from_path(ROOT / "docs" / "openapi.json")
EXAMPLES = int(os.environ.get("HAKI_FUZZ_EXAMPLES", "15"))


@pytest.fixture(scope="module")
def fuzz_server(server: Server) -> Server:
    return server


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=list(HealthCheck))
def test_every_route_holds_its_contract(case: schemathesis.Case, fuzz_server: Server) -> None:
    seen = len(fuzz_server.lines)
    try:
        case.call_and_validate(base_url=fuzz_server.url,
                               headers={"Authorization": f"Bearer {fuzz_server.key}"},
                               excluded_checks=[positive_data_acceptance])
    except Exception:
        # What the server logged about it (a 500's exception is only in its log).
        print("\n".join(line for line in fuzz_server.lines[seen:] if '"ERROR"' in line))
        raise


#: The edges of the range, as wall times: just inside and just outside 1970 and 9999.
_WALL_TIMES = ["0001-01-01T00:00:00", "1969-12-31T23:59:59.999999", "1970-01-01T00:00:00",
               "1970-01-01T13:59:59", "9999-12-31T23:59:59.999999", "9999-12-31T10:00:00",
               "9999-12-31T00:00:00"]


@st.composite
def edge_times(draw: st.DrawFn) -> str:
    """A wall time at an edge of the range with an offset from -14:00 to +14:00 (the ends
    themselves half the time)."""
    minutes = draw(st.one_of(st.sampled_from([-840, 840, 0]), st.integers(-840, 840)))
    sign = "-" if minutes < 0 else "+"
    offset = "Z" if minutes == 0 and draw(st.booleans()) else (
        f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}")
    return draw(st.sampled_from(_WALL_TIMES)) + offset


def _micros(wall: datetime) -> int:
    """Microseconds of a naive wall time since the start of year 1 (any year Python holds)."""
    seconds = (wall.toordinal() * 86_400 + wall.hour * 3600 + wall.minute * 60 + wall.second)
    return seconds * 1_000_000 + wall.microsecond


def _in_range(text: str) -> bool:
    """Whether ``text`` is between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59.999999Z once in
    UTC, computed on the wall time and the offset (so outside what a datetime holds too)."""
    wall, offset = (text[:-1], "+00:00") if text.endswith("Z") else (text[:-6], text[-6:])
    minutes = (int(offset[1:3]) * 60 + int(offset[4:])) * (-1 if offset[0] == "-" else 1)
    utc = _micros(datetime.fromisoformat(wall)) - minutes * 60_000_000
    return (_micros(datetime(1970, 1, 1)) <= utc
            <= _micros(datetime(9999, 12, 31, 23, 59, 59, 999999)))


@pytest.fixture(scope="module")
def time_tenant(fuzz_server: Server, data_dir: Path) -> tuple[Client, str, str]:
    project = f"fuzz-{uuid.uuid4().hex[:8]}"
    key, _ = create_key(data_dir, "org-fuzz", project, "--create-project")
    return Client(fuzz_server.url), key, project


def _check_time_write(tenant: tuple[Client, str, str], path: str, body: dict[str, Any],
                      time: str, subject: str) -> None:
    client, key, project = tenant
    reply = client.request("POST", path, key=key, body={"project_id": project, **body})
    assert reply.status < 500, (time, reply.json)
    if _in_range(time):
        assert reply.status == 201, (time, reply.json)
    else:
        assert (reply.status, reply.json["error"]["code"]) == (422, "validation_error"), time
    for method, route, query in [
        ("POST", "/v1/context", {"project_id": project, "subject_id": subject, "query": "when?"}),
        ("GET", f"/v1/facts?project_id={project}&subject_id={subject}", None),
    ]:
        answer = client.request(method, route, key=key, body=query)
        assert answer.status == 200, (time, route, answer.json)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(time=edge_times(), field=st.sampled_from(["occurred_at", "valid_from", "valid_to"]))
def test_times_at_the_edges_are_stored_or_refused_never_a_5xx(
        time_tenant: tuple[Client, str, str], time: str, field: str) -> None:
    subject = f"edge-{uuid.uuid4().hex[:6]}"
    if field == "occurred_at":
        body: dict[str, Any] = {"events": [{"subject_id": subject, "kind": "conversation.message",
                                            "payload": {"text": "a turn"}, field: time}]}
        _check_time_write(time_tenant, "/v1/events", body, time, subject)
    else:
        body = {"facts": [{"subject_id": subject, "predicate": "city", "value": "Lyon",
                           field: time}]}
        _check_time_write(time_tenant, "/v1/facts", body, time, subject)
