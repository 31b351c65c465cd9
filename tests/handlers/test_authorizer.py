"""The API's REQUEST authorizer (``functions/authorizer``) against the real database: a live
key is allowed on the whole stage with its project's usage key; anything else is denied, never
an error."""

from collections.abc import Callable
from typing import Any

import pytest

import functions.authorizer.app as authorizer_app
from haki.db import Database, Role
from haki.keys import USAGE_KEY_PREFIX
from haki_local.admin import create_key, revoke_key
from tests.handlers.conftest import FakeLambdaContext

METHOD_ARN = "arn:aws:execute-api:eu-west-3:123456789012:a1b2c3/prod/POST/v1/context"
STAGE_ARN = "arn:aws:execute-api:eu-west-3:123456789012:a1b2c3/prod/*/*"


@pytest.fixture
def authorize(db_urls: dict[Role, str], monkeypatch: pytest.MonkeyPatch,
              open_database: Callable[[str], Database]) -> Callable[[str | None], Any]:
    monkeypatch.setattr(authorizer_app, "db", open_database(db_urls[Role.APP]))

    def call(authorization: str | None) -> Any:
        headers = {} if authorization is None else {"Authorization": authorization}
        event = {"type": "REQUEST", "methodArn": METHOD_ARN, "resource": "/v1/context",
                 "path": "/v1/context", "httpMethod": "POST", "headers": headers,
                 "requestContext": {"requestId": "req-auth", "stage": "prod"}}
        return authorizer_app.handler(event, FakeLambdaContext())

    return call


def _statement(answer: dict[str, Any]) -> dict[str, Any]:
    (statement,) = answer["policyDocument"]["Statement"]
    return statement


def test_a_live_key_is_allowed_on_the_stage_with_its_projects_usage_key(
        authorize: Callable[[str | None], Any], owner_db: Database, project_id: str) -> None:
    new = create_key(owner_db, org_id="org-auth", project_id=project_id, label="auth",
                     create_project=True)
    other = create_key(owner_db, org_id="org-auth", project_id=project_id, label="second")
    answer = authorize(f"Bearer {new.key}")
    assert _statement(answer)["Effect"] == "Allow"
    assert _statement(answer)["Resource"] == [STAGE_ARN]
    assert answer["principalId"] == str(new.info.id)
    assert answer["context"] == {"org_id": "org-auth", "project_id": project_id}
    usage = answer["usageIdentifierKey"]
    assert usage.startswith(USAGE_KEY_PREFIX) and len(usage) >= 20  # API Gateway's minimum
    # Metered per project: every key of the project names the same usage key.
    assert authorize(f"bearer {other.key}")["usageIdentifierKey"] == usage


def test_another_projects_key_names_another_usage_key(
        authorize: Callable[[str | None], Any], owner_db: Database, project_id: str) -> None:
    mine = create_key(owner_db, org_id="org-auth", project_id=project_id, label="a",
                      create_project=True)
    theirs = create_key(owner_db, org_id="org-auth", project_id=f"{project_id}-other",
                        label="b", create_project=True)
    assert (authorize(f"Bearer {mine.key}")["usageIdentifierKey"]
            != authorize(f"Bearer {theirs.key}")["usageIdentifierKey"])


@pytest.mark.parametrize("authorization", [
    None,
    "",
    "Bearer",
    "Basic dXNlcjpwYXNz",
    "Bearer not-a-key",
    "Bearer hk_" + "x" * 500,
    "Bearer hk_unknownunknownunknownunknownunknown0000000",
    "Bearer hk_" + "\u00e9" * 30,
])
def test_a_missing_malformed_or_unknown_key_is_denied(
        authorize: Callable[[str | None], Any], authorization: str | None) -> None:
    answer = authorize(authorization)
    assert _statement(answer)["Effect"] == "Deny"
    assert answer["principalId"] == "anonymous"
    assert "usageIdentifierKey" not in answer and "context" not in answer


def test_a_revoked_key_is_denied(authorize: Callable[[str | None], Any], owner_db: Database,
                                 project_id: str) -> None:
    new = create_key(owner_db, org_id="org-auth", project_id=project_id, label="gone",
                     create_project=True)
    revoke_key(owner_db, new.info.id)
    assert _statement(authorize(f"Bearer {new.key}"))["Effect"] == "Deny"
