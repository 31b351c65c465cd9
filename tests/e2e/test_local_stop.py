"""``haki serve`` with its default two workers stops its embedded PostgreSQL on Ctrl-C and on
SIGTERM, leaves no pid in the server's list of holders, and a start after a crash does not
join the orphaned server."""

import json
import signal
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from haki_local.embedded import stop_embedded
from haki_local.launch import start
from tests.e2e.conftest import postgres_of

pytestmark = pytest.mark.slow


def _holders(data_dir: Path) -> list[int]:
    return list(json.loads((data_dir / "pg16" / ".handle_pids.json").read_text() or "[]"))


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_the_workers_and_the_database(
        server_data_dir: Callable[[str], Path], stop_signal: signal.Signals) -> None:
    data_dir = server_data_dir("test-e2e-stop-")
    server = start(data_dir, "--no-demo", "--workers", "2")
    assert postgres_of(data_dir)
    server.process.send_signal(stop_signal)
    assert server.process.wait(timeout=60) == 0, "\n".join(server.lines[-20:])
    assert postgres_of(data_dir) == set()
    assert _holders(data_dir) == []


def _crash(data_dir: Path) -> set[int]:
    """``haki serve`` killed outright (with its workers, not its database); the PostgreSQL
    processes it leaves running."""
    crashed = start(data_dir, "--no-demo", "--workers", "2")
    serve = psutil.Process(crashed.process.pid)
    for process in [serve, *serve.children(recursive=True)]:
        if process.name() != "postgres":
            process.kill()
    crashed.process.wait(timeout=30)
    orphan = postgres_of(data_dir)
    assert orphan, "killing haki serve leaves its database running"
    return orphan


def test_a_start_after_a_crash_does_not_join_the_orphaned_database(
        server_data_dir: Callable[[str], Path]) -> None:
    data_dir = server_data_dir("test-e2e-orphan-")
    orphan = _crash(data_dir)

    server = start(data_dir, "--no-demo", "--workers", "2")
    try:
        assert orphan.isdisjoint(postgres_of(data_dir))
    finally:
        server.process.send_signal(signal.SIGINT)
        assert server.process.wait(timeout=60) == 0, "\n".join(server.lines[-20:])
    assert postgres_of(data_dir) == set()
    assert _holders(data_dir) == [], "the crashed run's pids were dropped"


def test_releasing_a_folder_stops_a_server_no_live_process_holds(
        server_data_dir: Callable[[str], Path]) -> None:
    """What the test fixtures do with their folders at the end: a server left by a crashed
    ``haki serve`` stops although this process never joined it."""
    data_dir = server_data_dir("test-e2e-release-")
    _crash(data_dir)
    stop_embedded(data_dir)
    assert postgres_of(data_dir) == set()
