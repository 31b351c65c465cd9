"""The migration custom resource handler against a real PostgreSQL: the owner secret (moto's
Secrets Manager) leads to a migrated database, re-runs are no-ops, Delete keeps the schema."""

import json
from collections.abc import Callable
from urllib.parse import parse_qs, urlparse

import boto3
import psycopg
import pytest
from moto import mock_aws

from functions.migrate import app
from haki.db import Role
from haki.db.migrate import default_migrations_dir, load_migrations


def _secret_for(url: str) -> dict[str, object]:
    parsed = urlparse(url)
    return {"engine": "postgres", "host": parse_qs(parsed.query)["host"][0], "port": 5432,
            "dbname": parsed.path.lstrip("/"), "username": parsed.username, "password": ""}


def test_handler_migrates_then_noops_and_keeps_schema_on_delete(
    fresh_database: Callable[[], dict[Role, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    urls = fresh_database()
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    with mock_aws():
        arn = boto3.client("secretsmanager").create_secret(
            Name="owner", SecretString=json.dumps(_secret_for(urls[Role.OWNER])))["ARN"]
        event = {"RequestType": "Create", "ResourceProperties": {"SecretArn": arn}}
        created = app.handler(event, None)
        updated = app.handler({**event, "RequestType": "Update"}, None)
        deleted = app.handler({"RequestType": "Delete",
                               "PhysicalResourceId": created["PhysicalResourceId"]}, None)
    assert created["Data"]["AppliedCount"] == len(load_migrations(default_migrations_dir()))
    assert updated["Data"]["AppliedCount"] == 0
    assert deleted == {"PhysicalResourceId": created["PhysicalResourceId"]}
    with psycopg.connect(urls[Role.OWNER]) as conn:
        assert conn.execute("SELECT to_regclass('facts')").fetchone() == ("facts",)
