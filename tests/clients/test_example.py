"""``examples/agent_loop.py`` runs as a user would run it, against the clients'
``haki serve`` and against no service at all (it fails open)."""

import os
import re
import subprocess
import sys
from pathlib import Path

from haki_client import HakiClient
from haki_local.demo import DEMO_PROJECT
from tests.clients.stub import closed_port_url
from tests.e2e.conftest import Server

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agent_loop.py"


def run_example(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("HAKI_")}
    return subprocess.run([sys.executable, str(EXAMPLE), *args], env={**base, **env},
                          capture_output=True, text=True, timeout=120)


def test_the_agent_loop_prints_prompts_with_memory(haki_server: Server):
    done = run_example({"HAKI_URL": haki_server.url, "HAKI_API_KEY": haki_server.key,
                        "HAKI_PROJECT_ID": DEMO_PROJECT})
    assert done.returncode == 0, done.stderr
    prompts = done.stdout.split("===== turn ")[1:]
    assert len(prompts) == 2
    for prompt in prompts:
        assert re.match(r"\d: prompt for the model \(\d+ memory tokens, trace [0-9a-f-]{36}\)",
                        prompt)
        assert "[memory]\n<haki_memory>\nFacts:\n" in prompt and "</haki_memory>" in prompt
        assert "preferred language: fr" in prompt
    assert "user: Bonjour, c'est encore moi" in prompts[1]
    assert "assistant: <reply to turn 1>" in prompts[1]  # the transcript is kept
    assert "open_conflict" in done.stderr
    # Each turn was captured: the second turn's memory serves the first one as an episode.
    memory = prompts[1].split("<haki_memory>", 1)[1].split("</haki_memory>", 1)[0]
    episodes = memory.split("Episodes:\n", 1)[1]
    assert "Bonjour, c'est encore moi pour ma facture de mai." in episodes


def test_a_replayed_conversation_is_captured_once(haki_server: Server):
    env = {"HAKI_URL": haki_server.url, "HAKI_API_KEY": haki_server.key,
           "HAKI_PROJECT_ID": DEMO_PROJECT}
    args = ("--subject", "example-replay", "--conversation", "c-1", "Mon code client est 77.")
    assert run_example(env, *args).returncode == 0
    assert run_example(env, *args).returncode == 0
    with HakiClient(haki_server.url, haki_server.key, project_id=DEMO_PROJECT) as haki:
        answer = haki.context("example-replay", "code client", purpose="test")
    assert len(answer.packet.episodes) == 1


def test_the_agent_loop_answers_without_haki():
    done = run_example({"HAKI_URL": closed_port_url(), "HAKI_API_KEY": "hk_" + "A" * 43},
                       "--subject", "user-x", "Hello?")
    assert done.returncode == 0, done.stderr
    assert "trace None" in done.stdout and "[memory]" not in done.stdout
    assert "user: Hello?" in done.stdout and "haki_unavailable" in done.stderr
    assert "turn 1 not captured: connection_error" in done.stderr
