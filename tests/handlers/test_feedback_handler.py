"""``POST /v1/calls/{trace_id}/feedback`` through its handler: the stored feedback back (200),
listed by ``GET /v1/calls/{trace_id}`` and inspect, the stable 404 and 422 codes, and a note that
never reaches the logs."""

import uuid

import pytest

from haki.models import FactRecord
from tests.handlers.conftest import Answer, Invoke

FEEDBACK = "/v1/calls/{trace_id}/feedback"


def _feedback(invoke: Invoke, key: str, trace_id: str, body: dict[str, object]) -> Answer:
    return invoke("inspect", "POST", FEEDBACK, key=key, path_params={"trace_id": trace_id},
                  body=body)


def test_feedback_is_answered_listed_and_refused_with_stable_codes(
    invoke: Invoke, api_key: str, project_id: str, seeded: list[FactRecord],
    capsys: pytest.CaptureFixture[str],
) -> None:
    call = invoke("context", "POST", "/v1/context", key=api_key, body={
        "project_id": project_id, "subject_id": "alice", "query": "Which language?",
        "purpose": "support"})
    trace_id = call.json["trace_id"]
    served = [f["id"] for f in call.json["packet"]["facts"]]
    assert served
    scope = {"project_id": project_id, "subject_id": "alice"}
    capsys.readouterr()
    secret = f"the note {uuid.uuid4()}"
    stored = _feedback(invoke, api_key, trace_id, {
        **scope, "used": served[:1], "verdict": "helpful", "note": secret})
    assert stored.status == 200, stored.json
    assert (stored.json["source"], stored.json["used"], stored.json["missing"],
            stored.json["note"]) == ("agent", served[:1], [], secret)
    assert secret not in capsys.readouterr().out

    detail = invoke("inspect", "GET", "/v1/calls/{trace_id}", key=api_key,
                    path_params={"trace_id": trace_id}, query=scope)
    assert detail.json["trace"]["feedback"] == [stored.json]
    inspected = invoke("inspect", "GET", "/v1/inspect/{trace_id}", key=api_key,
                       path_params={"trace_id": trace_id}, query=scope)
    assert inspected.json["feedback"] == [stored.json]

    def listed(feedback: str) -> list[tuple[str, int]]:
        page = invoke("inspect", "GET", "/v1/calls", key=api_key,
                      query={"project_id": project_id, "feedback": feedback})
        return [(c["trace_id"], c["missing_reported"]) for c in page.json["calls"]]

    assert listed("any") == [(trace_id, 0)] and listed("missing") == []
    later = invoke("ingest", "POST", "/v1/facts", key=api_key, body={
        "project_id": project_id, "facts": [{"subject_id": "alice", "predicate": "pet",
                                             "value": "a cat"}]})
    lyon = later.json["facts"][0]["id"]
    assert _feedback(invoke, api_key, trace_id, {**scope, "source": "person",
                                                 "missing": [lyon]}).status == 200
    assert listed("missing") == [(trace_id, 1)]

    stranger = str(uuid.uuid4())
    refused = _feedback(invoke, api_key, trace_id, {**scope, "missing": [stranger]})
    assert (refused.status, refused.json["error"]["code"]) == (422, "invalid_feedback_ids")
    assert stranger in refused.json["error"]["message"]
    for unknown in (str(uuid.uuid4()), "not-a-trace"):
        lost = _feedback(invoke, api_key, unknown, scope)
        assert (lost.status, lost.json["error"]["code"]) == (404, "trace_not_found")
    elsewhere = _feedback(invoke, api_key, trace_id, {**scope, "subject_id": "bob"})
    assert (elsewhere.status, elsewhere.json["error"]["code"]) == (404, "trace_not_found")
    bad = _feedback(invoke, api_key, trace_id, {**scope, "used": ["nope"]})
    assert (bad.status, bad.json["error"]["code"]) == (422, "validation_error")
    other = _feedback(invoke, api_key, trace_id, {**scope, "project_id": "someone-else"})
    assert (other.status, other.json["error"]["code"]) == (403, "forbidden_scope")
