"""The service as a user installs it: its wheel built from the checkout, installed with the
``local`` extra into a fresh virtual environment, then ``haki`` run from a folder outside the
checkout — its version and help, and ``haki serve`` itself: the state (embedded PostgreSQL,
dev key) in ``./.haki`` of that folder, the migrations from the wheel, the model from
``HAKI_MODEL_DIR``.

Slow (a fresh environment, packages from the index), so in the ``slow`` tier on top of
``http``.
"""

import json
import os
import re
import signal
import subprocess
import sys
import tomllib
import urllib.request
import venv
from pathlib import Path

import pytest

from haki.settings import get_settings
from haki_local.demo import DEMO_PROJECT, DEMO_SUBJECT
from tests.e2e.conftest import postgres_of
from tests.tiers import ROOT

pytestmark = pytest.mark.slow

BANNER_URL = re.compile(r"^Haki local API: (http://\S+)$")
BANNER_KEY = re.compile(r"^API key \([^)]+\): (hk_\S+)$")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh environment holding the service's wheel and its ``local`` extra; its bin/."""
    wheels = tmp_path_factory.mktemp("service-wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels),
                    str(ROOT)], check=True)
    (wheel,) = wheels.glob("haki-*.whl")
    env_dir = tmp_path_factory.mktemp("service-venv")
    venv.create(env_dir, with_pip=True)
    subprocess.run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q",
                    "--disable-pip-version-check", f"{wheel}[local]"], check=True,
                   cwd=env_dir)
    return env_dir / "bin"


def outside(tmp_path: Path) -> dict[str, str]:
    """The environment of a user's shell: no HAKI_* setting, nothing of the checkout."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith("HAKI_") and k not in ("PYTHONPATH", "VIRTUAL_ENV")}


def test_haki_runs_from_any_directory(installed: Path, tmp_path: Path):
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    version = subprocess.run([str(installed / "haki"), "--version"], cwd=tmp_path,
                             env=outside(tmp_path), capture_output=True, text=True, check=True)
    assert version.stdout.strip() == f"haki {declared}"
    helped = subprocess.run([str(installed / "haki"), "serve", "--help"], cwd=tmp_path,
                            env=outside(tmp_path), capture_output=True, text=True, check=True)
    assert helped.stdout.startswith("usage: haki serve") and "examples:" in helped.stdout
    # The package is the environment's, not the checkout's.
    where = subprocess.run([str(installed / "python"), "-c",
                            "import haki, haki_local; print(haki.__file__, haki_local.__file__)"],
                           cwd=tmp_path, env=outside(tmp_path), capture_output=True, text=True,
                           check=True).stdout.split()
    assert all(Path(p).is_relative_to(installed.parent) for p in where)


def test_a_missing_model_is_one_line_naming_the_variable(installed: Path, tmp_path: Path):
    done = subprocess.run([str(installed / "haki"), "serve", "--port", "0"], cwd=tmp_path,
                          env=outside(tmp_path), capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    error = json.loads(done.stderr.strip().splitlines()[-1])["error"]
    assert error["code"] == "configuration_error" and "HAKI_MODEL_DIR" in error["message"]
    assert str(tmp_path / ".haki" / "models") in error["message"]


def test_haki_serve_keeps_its_state_in_the_working_directory(installed: Path, tmp_path: Path):
    env = {**outside(tmp_path), "HAKI_MODEL_DIR": str(get_settings().model_dir.resolve()),
           "PYTHONUNBUFFERED": "1"}
    server = subprocess.Popen([str(installed / "haki"), "serve", "--port", "0"], cwd=tmp_path,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
    lines: list[str] = []
    url = key = ""
    try:
        assert server.stdout is not None
        for line in server.stdout:
            lines.append(line.rstrip("\n"))
            if match := BANNER_URL.match(lines[-1]):
                url = match.group(1)
            if match := BANNER_KEY.match(lines[-1]):
                key = match.group(1)
            if url and key:
                break
        assert url and key, "\n".join(lines)
        request = urllib.request.Request(
            f"{url}/v1/context", method="POST", headers={
                "Authorization": f"Bearer {key}", "Content-Type": "application/json"},
            data=json.dumps({"project_id": DEMO_PROJECT, "subject_id": DEMO_SUBJECT,
                             "query": "Which language for the invoice?",
                             "purpose": "test", "render": True}).encode())
        with urllib.request.urlopen(request, timeout=60) as response:
            answer = json.loads(response.read())
    finally:
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=60) == 0
    assert postgres_of(tmp_path / ".haki") == set(), "Ctrl-C stops the database too"
    assert answer["trace_id"] and answer["block"].startswith("<haki_memory>")
    assert "preferred language" in answer["block"]
    state = tmp_path / ".haki"
    assert (state / "dev-key").read_text().strip() == key
    assert {p.name for p in state.iterdir()} - {"dev-key"}  # the embedded database beside it
