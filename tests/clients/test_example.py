"""``examples/agent_loop.py`` runs as a user would run it, against the clients'
``haki serve`` and against no service at all (it fails open); the README's Quickstart context
calls answer against that server as the README shows them."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from haki_client import HakiClient
from haki_local.demo import DEMO_PROJECT
from tests.clients.stub import closed_port_url
from tests.e2e.conftest import Client, Server

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "agent_loop.py"


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
        assert "[memory]\n<haki_memory>\n[f1] " in prompt and "</haki_memory>" in prompt
        assert "preferred language: fr" in prompt
    assert "user: Bonjour, c'est encore moi" in prompts[1]
    assert "assistant: <reply to turn 1>" in prompts[1]  # the transcript is kept
    assert "open_conflict" in done.stderr
    # Each turn was captured: the second turn's memory serves the first one as an episode.
    memory = prompts[1].split("<haki_memory>", 1)[1].split("</haki_memory>", 1)[0]
    episodes = memory.split("\n## ", 1)[1]
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


def readme_context_calls() -> list[tuple[dict[str, object], str]]:
    """The README Quickstart's ``curl .../v1/context`` commands, in order: each request body
    and the output the README shows under it."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quickstart = readme.split("\n## Quickstart\n", 1)[1].split("\n## ", 1)[0]
    calls = []
    for command in re.split(r"^\$ ", quickstart, flags=re.MULTILINE):
        found = re.match(r"curl -s \S+/v1/context .*?-d '(.*?)'\n(.*?)(?:```|\Z)", command,
                         re.DOTALL)
        if found:
            calls.append((json.loads(found.group(1)), found.group(2)))
    return calls


def test_the_readme_quickstart_answers_as_it_shows(haki_server: Server):
    """The first example is a healthy call (``ok``, no warning); the next one shows a
    ``degraded`` packet and the warnings the README quotes."""
    [(first, first_shown), (held_back, held_back_shown), *_] = readme_context_calls()
    client = Client(haki_server.url)

    answer = client.request("POST", "/v1/context", key=haki_server.key, body=first)
    assert answer.status == 200, answer.json
    packet = answer.json["packet"]
    assert packet["status"] == "ok" and packet["warnings"] == []
    assert '"status": "ok"' in first_shown and '"warnings": []' in first_shown
    shown = set(re.findall(r'"predicate": "(\w+)"', first_shown))
    assert shown and shown <= {fact["predicate"] for fact in packet["facts"]}

    answer = client.request("POST", "/v1/context", key=haki_server.key, body=held_back)
    assert answer.status == 200, answer.json
    packet = answer.json["packet"]
    assert packet["status"] == "degraded" and '"status": "degraded"' in held_back_shown
    reasons = {warning.split(":", 1)[0] for warning in packet["warnings"]}
    assert reasons == {"open_conflict", "volatility_expired"}
    assert all(f'"{warning}"' in held_back_shown for warning in packet["warnings"])
