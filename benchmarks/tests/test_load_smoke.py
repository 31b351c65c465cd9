"""The load test harness on a real local server, briefly: both runs call, none fails; a
non-loopback target is refused."""

import json
from pathlib import Path

import pytest

from benchmarks import load
from tests.e2e.conftest import Server


def test_load_test_runs_one_and_two_clients_without_errors(server: Server, tmp_path: Path) -> None:
    out = tmp_path / "load.json"
    code = load.main(["--url", server.url, "--key", server.key, "--clients", "2",
                      "--seconds", "2", "--out", str(out)])
    report = json.loads(out.read_text())
    assert code == 0
    assert [run["clients"] for run in report["runs"]] == [1, 2]
    for run in report["runs"]:
        assert run["calls"] > 0 and run["errors"] == 0 and run["p99_ms"] >= run["p50_ms"] > 0


def test_load_test_refuses_another_machine() -> None:
    with pytest.raises(SystemExit):
        load.main(["--url", "http://10.1.2.3:8787", "--key", "hk_x", "--seconds", "1"])
