"""A database that stops answering without closing its sockets (every process of a dedicated
embedded PostgreSQL frozen with SIGSTOP): a context call answers 503 ``service_unavailable``
within a bound set by the configuration, not by how long the freeze lasts, and the next call
after SIGCONT is served.

The bound: the statement timeout and the client's grace past it (``ANSWER_GRACE_S``), or the
Lambda's remaining time, whichever ends first. The timing checks are loose on purpose (twice
the bound, plus slack for a loaded machine): they tell a bounded wait from an unbounded one.
"""

import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

import functions.context.app as context_app
from haki.db import Database, Role
from haki.db.connection import ANSWER_GRACE_S
from haki.db.migrate import apply_migrations
from haki_local.admin import create_key
from haki_local.embedded import (
    POSTGRES_MAJOR,
    embedded_role_url,
    ensure_database,
    start_embedded,
)
from tests.handlers.conftest import FakeLambdaContext, api_event

pytestmark = pytest.mark.slow

#: Added to every timing bound: a loaded shared machine, the embedder's first load.
SLACK_S = 5.0


@dataclass(frozen=True)
class TimedLambdaContext(FakeLambdaContext):
    """A Lambda context whose function has ``remaining_ms`` left."""

    remaining_ms: int = 900_000

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


@dataclass
class Instance:
    data_dir: Path
    urls: dict[Role, str]

    def processes(self) -> list[psutil.Process]:
        """The postmaster and every process it started (backends, background workers)."""
        pid_file = self.data_dir / f"pg{POSTGRES_MAJOR}" / "postmaster.pid"
        postmaster = psutil.Process(int(pid_file.read_text().split()[0]))
        return [postmaster, *postmaster.children(recursive=True)]

    @contextmanager
    def frozen(self, at_most_s: float) -> Iterator[None]:
        """Every process stopped for the block, and at most ``at_most_s`` (a wait that is not
        bounded then ends, late, instead of hanging the test run)."""
        stopped = self.processes()

        def thaw() -> None:
            for process in stopped:
                os.kill(process.pid, signal.SIGCONT)

        for process in stopped:
            os.kill(process.pid, signal.SIGSTOP)
        timer = threading.Timer(at_most_s, thaw)
        timer.start()
        try:
            yield
        finally:
            timer.cancel()
            thaw()


@pytest.fixture(scope="module")
def instance(server_data_dir: Callable[[str], Path]) -> Instance:
    data_dir = server_data_dir("test-freeze-pg-")
    superuser = start_embedded(data_dir)
    ensure_database(superuser, "haki")
    urls = {role: embedded_role_url(superuser, role, "haki") for role in Role}
    apply_migrations(urls[Role.OWNER])
    return Instance(data_dir, urls)


@pytest.fixture
def key(instance: Instance, project_id: str) -> Iterator[str]:
    owner = Database(instance.urls[Role.OWNER])
    try:
        yield create_key(owner, org_id="org-test", project_id=project_id, label="tests",
                         create_project=True).key
    finally:
        owner.close()


def _context_call(key: str, project_id: str, context: FakeLambdaContext) -> tuple[int, dict]:
    body = {"project_id": project_id, "subject_id": "alice", "query": "where does alice live?"}
    result = context_app.handler(api_event("POST", "/v1/context", key=key, body=body), context)
    return result["statusCode"], json.loads(result["body"])


@pytest.mark.parametrize(("statement_timeout_ms", "remaining_ms", "bound_s"), [
    # The statement timeout and the client's grace.
    (1000, 900_000, 1.0 + ANSWER_GRACE_S),
    # No statement timeout of its own: the Lambda's remaining time bounds the wait.
    (0, 3000, 3.0),
], ids=["statement-timeout", "lambda-remaining-time"])
def test_a_frozen_database_is_a_bounded_503_and_the_next_call_is_served(
    instance: Instance, key: str, project_id: str, monkeypatch: pytest.MonkeyPatch,
    statement_timeout_ms: int, remaining_ms: int, bound_s: float,
) -> None:
    db = Database(instance.urls[Role.APP], statement_timeout_ms=statement_timeout_ms)
    monkeypatch.setattr(context_app, "db", db)
    context = TimedLambdaContext(remaining_ms=remaining_ms)
    try:
        # Served, which also warms the key's authentication and the embedder.
        assert _context_call(key, project_id, context)[0] == 200
        patience = 2 * bound_s + SLACK_S
        with instance.frozen(at_most_s=patience + 5):
            started = time.monotonic()
            status, body = _context_call(key, project_id, context)
            waited = time.monotonic() - started
        assert (status, body.get("error", {}).get("code")) == (503, "service_unavailable")
        assert waited < patience
        status, body = _context_call(key, project_id, context)
        assert status == 200, body
        assert body["packet"]["empty_reason"] == "no_memory"
    finally:
        db.close()
