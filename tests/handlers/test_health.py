"""The health checks (``functions/health``): liveness and readiness answer without a key, and
readiness reaches the real database; out of reach, it is a 503 that names nothing of the
deployment."""

import re
from pathlib import Path

import pytest

import functions.health.app as health_app
from haki.db import Database
from tests.handlers.conftest import Invoke


def test_liveness_answers_without_a_key(invoke: Invoke) -> None:
    answer = invoke("health", "GET", "/v1/health", key=None)
    assert (answer.status, answer.json) == (200, {"status": "ok"})


def test_readiness_reaches_the_database_without_a_key(invoke: Invoke) -> None:
    answer = invoke("health", "GET", "/v1/health/ready", key=None)
    assert (answer.status, answer.json) == (200, {"status": "ready"})


def test_a_key_changes_nothing_and_is_not_checked(invoke: Invoke) -> None:
    answer = invoke("health", "GET", "/v1/health/ready", key="hk_not-a-key")
    assert (answer.status, answer.json) == (200, {"status": "ready"})


def test_readiness_without_the_database_is_a_503_that_reveals_nothing(
        invoke: Invoke, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # A real connection attempt to a server that is not there.
    gone = Database(f"postgresql://haki_app@/haki?host={tmp_path}&connect_timeout=2")
    monkeypatch.setattr(health_app, "db", gone)
    answer = invoke("health", "GET", "/v1/health/ready", key=None)
    assert answer.status == 503
    assert answer.json["error"]["code"] == "service_unavailable"
    message = answer.json["error"]["message"]
    assert str(tmp_path) not in message and "haki_app" not in message
    assert not re.search(r"\d+\.\d+|postgres|psycopg|socket", message, re.IGNORECASE)
    # Liveness does not touch the database.
    assert invoke("health", "GET", "/v1/health", key=None).status == 200
