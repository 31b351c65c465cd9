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
from haki.db.migrate import (
    apply_migrations,
    default_migrations_dir,
    load_migrations,
    load_routines,
)
from haki.db.scope_indexes import graph_name
from haki.settings import get_settings


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
    assert created["Data"]["AppliedCount"] == len(
        load_migrations(default_migrations_dir()) + load_routines(default_migrations_dir()))
    assert updated["Data"]["AppliedCount"] == 0
    assert deleted == {"PhysicalResourceId": created["PhysicalResourceId"]}
    with psycopg.connect(urls[Role.OWNER]) as conn:
        assert conn.execute("SELECT to_regclass('facts')").fetchone() == ("facts",)


def test_the_scheduled_task_builds_the_scope_indexes_as_the_owner(
    fresh_database: Callable[[], dict[Role, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``{"task": "scope_indexes"}``: the owner secret, the settings' policy, a deadline from
    the function's remaining time (none left: every wanted build deferred)."""
    urls = fresh_database()
    apply_migrations(urls[Role.OWNER])
    with psycopg.connect(urls[Role.OWNER], autocommit=True) as conn:
        for subject, count in (("big", 30), ("other", 30)):
            conn.execute(
                "INSERT INTO facts (id, project_id, subject_id, predicate, value, embedding) "
                "SELECT gen_random_uuid(), 'p', %s, 'note', to_jsonb(i), "
                "array_fill(1.0 / sqrt(384), ARRAY[384])::vector FROM generate_series(1, %s) i",
                (subject, count))
    monkeypatch.setenv("HAKI_SCOPE_INDEX_MIN_ROWS", "20")
    monkeypatch.setenv("HAKI_SCOPE_INDEX_MAX_SHARE", "0.6")
    get_settings.cache_clear()
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")

    class Context:
        def __init__(self, remaining_ms: int) -> None:
            self.remaining_ms = remaining_ms

        def get_remaining_time_in_millis(self) -> int:
            return self.remaining_ms

    try:
        with mock_aws():
            arn = boto3.client("secretsmanager").create_secret(
                Name="owner", SecretString=json.dumps(_secret_for(urls[Role.OWNER])))["ARN"]
            event = {"task": "scope_indexes", "SecretArn": arn}
            late = app.handler(event, Context(remaining_ms=1000))
            done = app.handler(event, Context(remaining_ms=600_000))
            again = app.handler(event, Context(remaining_ms=600_000))
    finally:
        get_settings.cache_clear()
    # Two scopes, each a graph and a text index of its facts.
    assert late == {"ran": True, "built": 0, "dropped": 0, "kept": 0, "deferred": 4, "failed": 0}
    assert done == {"ran": True, "built": 4, "dropped": 0, "kept": 0, "deferred": 0, "failed": 0}
    assert again == {"ran": True, "built": 0, "dropped": 0, "kept": 4, "deferred": 0, "failed": 0}
    with psycopg.connect(urls[Role.OWNER]) as conn:
        names = {row[0] for row in conn.execute(
            "SELECT indexname FROM pg_indexes WHERE indexname LIKE 'facts\\_scope\\_hnsw\\_%'")}
    assert names == {graph_name("facts", "p", "big"), graph_name("facts", "p", "other")}
