"""The ``haki`` command line as a user meets it: its version, each command's help with
examples, and a mistake (a busy port, a bad setting) said on one line, never a traceback.
None of these reaches the database: the checks come first."""

import json
import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from haki_local.launch import local_env
from tests.tiers import ROOT


def haki(tmp_path: Path, *args: str, **settings: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "haki_local.cli", *args],
                          env={**local_env(tmp_path), **settings}, capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)


def one_error_line(done: subprocess.CompletedProcess[str]) -> dict[str, str]:
    assert done.returncode != 0 and done.stdout == ""
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    error: dict[str, str] = json.loads(lines[0])["error"]
    return error


def test_version_is_the_packages():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    done = subprocess.run([sys.executable, "-m", "haki_local.cli", "--version"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == f"haki {declared}"


@pytest.mark.parametrize("command", ["serve", "load", "context", "keys", "mcp", "eval"])
def test_each_command_help_ends_with_examples(tmp_path: Path, command: str):
    done = haki(tmp_path, command, "--help")
    assert done.returncode == 0
    usage, examples = done.stdout.split("\nexamples:\n")
    assert usage.startswith(f"usage: haki {command}")
    lines = examples.rstrip().splitlines()
    assert lines and all(line.startswith("  ") and "haki" in line for line in lines)
    assert f"haki {command}" in examples


def test_a_busy_port_is_one_line_and_a_non_zero_exit(tmp_path: Path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = haki(tmp_path, "serve", "--port", str(port))
    error = one_error_line(done)
    assert error["code"] == "port_unavailable"
    assert f"127.0.0.1:{port}" in error["message"] and "already in use" in error["message"]
    assert list(tmp_path.iterdir()) == []  # refused before the database started


def test_a_port_out_of_range_is_refused(tmp_path: Path):
    error = one_error_line(haki(tmp_path, "serve", "--port", "70000"))
    assert error["code"] == "validation_error" and "--port 70000" in error["message"]


@pytest.mark.parametrize(("variable", "value"), [
    ("HAKI_EMBED_THREADS", "0"), ("HAKI_LOG_SUBJECT_IDS", "sometimes"),
    ("HAKI_DB_PORT", "eighty"),
])
def test_a_bad_setting_is_one_line_naming_it(tmp_path: Path, variable: str, value: str):
    error = one_error_line(haki(tmp_path, "serve", "--port", "0", **{variable: value}))
    assert error["code"] == "configuration_error" and variable in error["message"]
