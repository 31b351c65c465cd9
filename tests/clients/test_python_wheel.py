"""The Python SDK as a user installs it: its wheel built from clients/python, installed into
fresh virtual environments outside the checkout, one with the oldest pydantic it supports
(2.7) and one with the newest 2.x, each then calling a real ``haki serve``.

Slow (two environments, packages from the index), so in the ``slow`` tier on top of ``http``.
"""

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from haki_local.demo import DEMO_PROJECT
from tests.e2e.conftest import Server
from tests.tiers import ROOT

pytestmark = pytest.mark.slow

#: Run by the installed SDK, in a folder without the checkout on its path: one fact written,
#: one context call (its default purpose: a healthy answer reads "ok"), one typed error.
CONSUMER = """
import json, sys, uuid
import pydantic
import haki_client
from haki_client import HakiClient, NotFoundError, render

url, key, project = sys.argv[1:4]
who = f"wheel-{uuid.uuid4().hex[:8]}"
with HakiClient(url, key, project_id=project) as haki:
    haki.record_fact(who, "preferred_language", "fr")
    answer = haki.context(who, "Which language for Marie?", render=True, timeout=30)
    try:
        haki.inspect(uuid.uuid4(), subject_id=who)
        missing = None
    except NotFoundError as error:
        missing = error.code
print(json.dumps({
    "pydantic": pydantic.VERSION, "sdk": haki_client.__file__,
    "status": answer.packet.status, "facts": [f.value for f in answer.packet.facts],
    "block": render(answer), "missing": missing,
}))
"""


@pytest.fixture(scope="module")
def sdk_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sdk-wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out),
                    str(ROOT / "clients" / "python")], check=True)
    (wheel,) = out.glob("haki_client-*.whl")
    return wheel


@pytest.mark.parametrize(("pydantic", "extra"), [
    ("pydantic==2.7.*", ""),
    ("pydantic>=2.7,<3", "[mcp]"),  # the newest 2.x, with the MCP server's extra
])
def test_the_wheel_installs_beside_pydantic_2_7_and_the_newest(
        sdk_wheel: Path, pydantic: str, extra: str, haki_server: Server, tmp_path: Path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    f"{sdk_wheel}{extra}", pydantic], check=True, cwd=tmp_path)
    script = tmp_path / "consumer.py"
    script.write_text(CONSUMER, encoding="utf-8")
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HAKI_API_KEY")}
    run = subprocess.run([str(python), str(script), haki_server.url, haki_server.key,
                          DEMO_PROJECT], cwd=tmp_path, env=environ, capture_output=True,
                         text=True, check=True)
    seen = json.loads(run.stdout)

    assert Path(seen["sdk"]).is_relative_to(env_dir)  # the installed wheel, not the checkout
    major, minor = (int(n) for n in seen["pydantic"].split(".")[:2])
    if pydantic.startswith("pydantic==2.7"):
        assert (major, minor) == (2, 7)
    else:  # whatever the index's newest 2.x is today, later than the oldest supported
        assert major == 2 and minor > 7
    assert seen["status"] == "ok" and seen["facts"] == ["fr"]
    assert seen["block"].startswith("<haki_memory>") and "fr" in seen["block"]
    assert seen["missing"] == "trace_not_found"
    if extra:  # the MCP server's own command, installed by the extra
        helped = subprocess.run([str(env_dir / "bin" / "haki-mcp"), "--help"], cwd=tmp_path,
                                env=environ, capture_output=True, text=True, check=True)
        assert "HAKI_SUBJECT" in helped.stdout and "HAKI_API_KEY" in helped.stdout
