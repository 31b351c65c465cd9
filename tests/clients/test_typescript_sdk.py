"""The TypeScript SDK (clients/typescript), tested by Node's own test runner against the
clients' ``haki serve``: installs its pinned dev dependencies (``npm ci``, committed lock
file), compiles it (``tsc``, which also type-checks it against the types generated from
docs/openapi.json) and runs ``node --test``. The block the SDK hands over for a live hostile
packet is checked here against the service's answer to the same call, read without an SDK."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from haki_local.demo import DEMO_PROJECT
from tests.clients.hostile import HOSTILE_QUERY, HOSTILE_SUBJECT
from tests.e2e.conftest import Client, Server

PACKAGE = Path(__file__).resolve().parents[2] / "clients" / "typescript"


def npm(*args: str) -> None:
    done = subprocess.run(["npm", *args], cwd=PACKAGE, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, f"npm {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"


def ensure_installed() -> None:
    """``npm ci`` unless node_modules already holds exactly the lock file's packages."""
    installed = PACKAGE / "node_modules" / ".package-lock.json"
    lock = PACKAGE / "package-lock.json"
    if not installed.is_file() or installed.stat().st_mtime < lock.stat().st_mtime:
        npm("ci", "--no-audit", "--no-fund")


@pytest.fixture(scope="module")
def built() -> Path:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.fail("Node.js 20+ and npm are needed for the TypeScript SDK's tests")
    ensure_installed()
    npm("run", "build")
    return PACKAGE / "dist"


def test_typescript_sdk(built: Path, haki_server: Server, tmp_path: Path):
    rendered = tmp_path / "rendered.json"
    env = {**os.environ, "HAKI_URL": haki_server.url, "HAKI_API_KEY": haki_server.key,
           "HAKI_PROJECT_ID": DEMO_PROJECT, "HAKI_RENDER_OUT": str(rendered),
           "HAKI_HOSTILE_SUBJECT": HOSTILE_SUBJECT, "HAKI_HOSTILE_QUERY": HOSTILE_QUERY}
    done = subprocess.run(["node", "--test", "test/"], cwd=PACKAGE, env=env,
                          capture_output=True, text=True, timeout=600)
    summary = dict(re.findall(r"^# (tests|pass|fail|skipped|cancelled) (\d+)$", done.stdout, re.M))
    print("node --test:", summary)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert summary["fail"] == "0" and summary["skipped"] == "0" and int(summary["pass"]) >= 18

    # The block the TypeScript SDK handed over for a live hostile packet is the service's.
    out = json.loads(rendered.read_text(encoding="utf-8"))
    served = Client(haki_server.url).request(
        "POST", "/v1/context", key=haki_server.key, body={
            "project_id": DEMO_PROJECT, "subject_id": HOSTILE_SUBJECT, "query": HOSTILE_QUERY,
            "purpose": "test", "budget_tokens": 4000, "render": True}).json
    assert served["block"].startswith("<haki_memory>\n") and out["rendered"] == served["block"]
