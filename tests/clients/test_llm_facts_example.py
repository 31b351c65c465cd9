"""``examples/llm_facts.py`` runs as a user would run it, against the clients' ``haki serve``
with a stub in place of the model (an OpenAI-compatible chat-completions endpoint answering a
scripted extraction): the conversation is stored as events, the model's facts are checked and
written through ``record_fact`` with the messages they came from as sources, a bad one is
skipped, a second run reinforces instead of duplicating, and the next context call serves
them."""

import json
import os
import subprocess
import sys
from pathlib import Path

from haki_client import HakiClient
from haki_local.demo import DEMO_PROJECT
from tests.clients.stub import Scripted, stub_server
from tests.e2e.conftest import Server

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "llm_facts.py"
SUBJECT = "example-llm-facts"

#: What the model answers: two good facts, and two the example must refuse.
EXTRACTED = {"facts": [
    {"predicate": "billing_city", "value": "Porto", "confidence": 0.9, "volatility": "slow",
     "message_ids": ["m-41"]},
    {"predicate": "preferred_language", "value": "pt", "confidence": 0.8,
     "message_ids": ["m-43"]},
    {"predicate": "mood", "value": "happy", "confidence": 1.7, "message_ids": ["m-41"]},
    {"predicate": "employer", "value": "Acme", "confidence": 0.5, "message_ids": ["m-99"]},
]}


def completion(content: object) -> Scripted:
    return Scripted(200, {"id": "chatcmpl-stub", "object": "chat.completion", "choices": [
        {"index": 0, "finish_reason": "stop",
         "message": {"role": "assistant", "content": json.dumps(content)}}]})


def run_example(server: Server, llm_url: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HAKI_", "LLM_"))}
    env.update({"HAKI_URL": server.url, "HAKI_API_KEY": server.key,
                "HAKI_PROJECT_ID": DEMO_PROJECT, "LLM_URL": llm_url, "LLM_API_KEY": "sk-stub",
                "LLM_MODEL": "stub-model"})
    return subprocess.run([sys.executable, str(EXAMPLE), "--subject", SUBJECT], env=env,
                          capture_output=True, text=True, timeout=120)


def test_facts_from_the_tenants_model_are_written_with_their_sources(haki_server: Server):
    with stub_server([completion(EXTRACTED), completion(EXTRACTED)]) as llm:
        first = run_example(haki_server, llm.url)
        assert first.returncode == 0, first.stderr
        second = run_example(haki_server, llm.url)
        assert second.returncode == 0, second.stderr

    # The model got the conversation, with the message ids it must cite, from the tenant's key.
    method, path, headers, body, _ = llm.requests[0]
    assert (method, path) == ("POST", "/chat/completions")
    assert headers["Authorization"] == "Bearer sk-stub"
    request = json.loads(body)
    assert request["model"] == "stub-model"
    assert "[m-41] user: I just moved to Porto" in request["messages"][1]["content"]

    assert first.stdout.splitlines()[0].startswith("created: billing_city = \"Porto\"")
    assert first.stdout.splitlines()[1].startswith("created: preferred_language = \"pt\"")
    assert "skipped: mood: confidence 1.7 is not within 0..1" in first.stderr
    assert "skipped: employer: message_ids ['m-99']" in first.stderr
    # Run again: the same messages (deduplicated) and the same facts, reinforced.
    assert second.stdout.splitlines()[0].startswith("reinforced: billing_city")

    with HakiClient(haki_server.url, haki_server.key, project_id=DEMO_PROJECT) as haki:
        facts = {f.predicate: f for f in haki.list_facts(SUBJECT).facts}
        events = haki.list_events(SUBJECT).events
        answer = haki.context(SUBJECT, "Where should the invoices go?", purpose="test")
    assert set(facts) == {"billing_city", "preferred_language"}
    assert len(events) == 3  # the conversation, stored once
    (porto,) = [e.id for e in events if e.payload["text"].startswith("I just moved to Porto")]
    assert facts["billing_city"].source_event_ids == [porto]
    assert "billing_city" in {f.predicate for f in answer.packet.facts}
    assert "Porto" in first.stdout.split("<haki_memory>", 1)[1]
