"""The local API passes every call through the authorizer first, as the deployed API does
(stub handlers, no database): the key alone decides, in the edge's error contract."""

from typing import Any

import pytest
from starlette.testclient import TestClient

from haki_aws.routes import ROUTES
from haki_local.server import create_app

POLICY = {"Version": "2012-10-17", "Statement": [{"Action": "execute-api:Invoke",
                                                   "Resource": ["*"]}]}


class Recorder:
    def __init__(self) -> None:
        self.authorized: list[dict[str, Any]] = []
        self.handled: list[dict[str, Any]] = []

    def authorizer(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        self.authorized.append(event)
        token = {k.lower(): v for k, v in event["headers"].items()}["authorization"]
        if token == "Bearer boom":
            raise RuntimeError("the key store is down")
        effect = "Allow" if token == "Bearer good" else "Deny"
        statement = {**POLICY["Statement"][0], "Effect": effect}
        answer: dict[str, Any] = {"principalId": "key-1" if effect == "Allow" else "anonymous",
                                  "policyDocument": {**POLICY, "Statement": [statement]}}
        if effect == "Allow":
            answer["context"] = {"project_id": "p", "org_id": "o"}
        return answer

    def handler(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        self.handled.append(event)
        return {"statusCode": 200, "headers": {"Content-Type": "application/json"},
                "body": "{}"}


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def client(recorder: Recorder) -> TestClient:
    handlers = {r.function: recorder.handler for r in ROUTES}
    return TestClient(create_app(handlers, authorizer=recorder.authorizer))


def test_no_authorization_header_is_401_before_the_authorizer(
        client: TestClient, recorder: Recorder) -> None:
    answer = client.post("/v1/context", json={})
    assert answer.status_code == 401
    assert answer.json()["error"]["code"] == "unauthorized"
    assert recorder.authorized == [] and recorder.handled == []


def test_a_denied_key_is_401_and_no_handler_runs(client: TestClient, recorder: Recorder) -> None:
    answer = client.post("/v1/context", json={}, headers={"Authorization": "Bearer bad"})
    assert answer.status_code == 401
    assert answer.json()["error"]["code"] == "unauthorized"
    (event,) = recorder.authorized
    assert event["type"] == "REQUEST" and event["methodArn"].endswith("/POST/v1/context")
    assert "body" not in event
    assert recorder.handled == []


def test_a_failing_authorizer_is_503_not_500(client: TestClient, recorder: Recorder) -> None:
    answer = client.get("/v1/stats/overview", headers={"Authorization": "Bearer boom"})
    assert answer.status_code == 503
    assert answer.json()["error"]["code"] == "service_unavailable"
    assert recorder.handled == []


def test_an_allowed_call_reaches_its_handler_with_the_authorizers_context(
        client: TestClient, recorder: Recorder) -> None:
    answer = client.post("/v1/context", json={}, headers={"Authorization": "Bearer good"})
    assert answer.status_code == 200
    (event,) = recorder.handled
    assert event["requestContext"]["authorizer"] == {
        "principalId": "key-1", "project_id": "p", "org_id": "o"}


def test_another_method_is_405_only_to_an_authorized_caller(
        client: TestClient, recorder: Recorder) -> None:
    assert client.delete("/v1/context").status_code == 401
    assert client.delete("/v1/context", headers={"Authorization": "Bearer bad"}
                         ).status_code == 401
    allowed = client.delete("/v1/context", headers={"Authorization": "Bearer good"})
    assert allowed.status_code == 405 and allowed.headers["Allow"] == "POST"
    assert recorder.handled == []


def test_the_health_checks_skip_the_authorizer_as_the_deployed_api_does(
        client: TestClient, recorder: Recorder) -> None:
    for path in ("/v1/health", "/v1/health/ready"):
        assert client.get(path).status_code == 200
        assert client.get(path, headers={"Authorization": "Bearer bad"}).status_code == 200
    assert recorder.authorized == [] and len(recorder.handled) == 4
    other = client.post("/v1/health", json={})
    assert other.status_code == 405 and other.headers["Allow"] == "GET"
    assert recorder.authorized == []
