"""``haki mcp`` driven by the official MCP SDK's own client over stdio (the server runs as a
subprocess, exactly as an agent host starts it) against the clients' ``haki serve``."""

import asyncio
import os
import subprocess
import sys
import uuid
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from haki_local.demo import DEMO_PROJECT, DEMO_SUBJECT
from tests.clients.stub import closed_port_url
from tests.e2e.conftest import Server

QUERY = "Which language should we use when writing to Marie about her invoice?"


def params(env: dict[str, str]) -> StdioServerParameters:
    base = {k: v for k, v in os.environ.items() if not k.startswith("HAKI_")}
    return StdioServerParameters(command=sys.executable, args=["-m", "haki_local.cli", "mcp"],
                                 env={**base, **env})


def run(env: dict[str, str], calls: list[tuple[str, dict[str, Any]]]) -> tuple[list, list]:
    async def session() -> tuple[list, list]:
        async with Client(params(env), read_timeout_seconds=60) as client:
            tools = (await client.list_tools()).tools
            return tools, [await client.call_tool(name, arguments) for name, arguments in calls]

    return asyncio.run(session())


def text(result: Any) -> str:
    return "".join(block.text for block in result.content if block.type == "text")


def test_recall_and_inspect_over_stdio(haki_server: Server):
    env = {"HAKI_URL": haki_server.url, "HAKI_API_KEY": haki_server.key,
           "HAKI_PROJECT_ID": DEMO_PROJECT}
    tools, [recalled] = run(env, [("recall", {
        "subject_id": DEMO_SUBJECT, "query": QUERY, "purpose": "support_reply",
        "budget_tokens": 200})])
    assert {"recall", "inspect"} <= {tool.name for tool in tools}
    recall_tool = next(tool for tool in tools if tool.name == "recall")
    assert recall_tool.input_schema["required"] == ["subject_id", "query"]
    assert not recalled.is_error
    data = recalled.structured_content
    assert data["memory"].startswith("<haki_memory>\nFacts:\n") and data["trace_id"]
    assert data["token_count"] <= 200 and data["warnings"]
    assert text(recalled).startswith(data["memory"])
    assert text(recalled).endswith(f"trace_id: {data['trace_id']}")

    _, [inspected, missing] = run(env, [
        ("inspect", {"trace_id": data["trace_id"], "subject_id": DEMO_SUBJECT}),
        ("inspect", {"trace_id": "3fdb9157-2449-4afe-a59b-5c5b0c621f5a",
                     "subject_id": DEMO_SUBJECT})])
    trace = inspected.structured_content
    assert not inspected.is_error and trace["query"] == QUERY
    assert trace["memory"] == data["memory"]
    assert {d["action"] for d in trace["decisions"]} >= {"included", "blocked"}
    assert missing.is_error and "trace_not_found" in text(missing)


def test_remember_record_recall_and_forget_over_stdio(haki_server: Server):
    env = {"HAKI_URL": haki_server.url, "HAKI_API_KEY": haki_server.key,
           "HAKI_PROJECT_ID": DEMO_PROJECT}
    who = f"mcp-{uuid.uuid4().hex[:10]}"
    text_said = "Je serai absente du 3 au 21 mars : écrivez à Julie Martin pour la facture."
    tools, [remembered, again, recorded, recalled, forgotten, after] = run(env, [
        ("remember", {"subject_id": who, "text": text_said, "idempotency_key": f"{who}-1"}),
        ("remember", {"subject_id": who, "text": text_said, "idempotency_key": f"{who}-1"}),
        ("record_fact", {"subject_id": who, "predicate": "preferred_language", "value": "fr",
                         "confidence": 0.9}),
        ("recall", {"subject_id": who, "query": "Qui contacter pour la facture ?"}),
        ("forget", {"subject_id": who, "mode": "delete"}),
        ("recall", {"subject_id": who, "query": "Qui contacter pour la facture ?"}),
    ])
    annotations = {tool.name: tool.annotations for tool in tools}
    assert annotations["forget"].destructive_hint and not annotations["remember"].read_only_hint
    assert not any(r.is_error for r in (remembered, again, recorded, recalled, forgotten))
    event_id = remembered.structured_content["event_id"]
    assert again.structured_content == {"event_id": event_id, "deduplicated": True}
    assert recorded.structured_content["outcome"] == "created"
    memory = recalled.structured_content["memory"]
    assert "Julie Martin" in memory and "preferred language: fr" in memory
    assert forgotten.structured_content["target"] == "subject"
    assert forgotten.structured_content["counts"]["facts"] == 1
    assert after.structured_content["memory"] == ""


def test_recall_fails_open_and_errors_carry_the_code(haki_server: Server):
    down = {"HAKI_URL": closed_port_url(), "HAKI_API_KEY": haki_server.key,
            "HAKI_PROJECT_ID": DEMO_PROJECT}
    _, [recalled] = run(down, [("recall", {"subject_id": DEMO_SUBJECT, "query": QUERY})])
    assert not recalled.is_error
    assert recalled.structured_content["memory"] == ""
    assert recalled.structured_content["trace_id"] is None
    assert "haki_unavailable" in text(recalled)

    other = {"HAKI_URL": haki_server.url, "HAKI_API_KEY": haki_server.key,
             "HAKI_PROJECT_ID": "atelier-voyage"}
    _, [refused] = run(other, [("recall", {"subject_id": DEMO_SUBJECT, "query": QUERY})])
    assert refused.is_error and "forbidden_scope: this API key" in text(refused)


def test_haki_mcp_says_what_is_missing():
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAKI_")}
    done = subprocess.run([sys.executable, "-m", "haki_local.cli", "mcp"], env=env,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and done.stdout == ""
    assert "HAKI_API_KEY and HAKI_PROJECT_ID" in done.stderr


@pytest.mark.parametrize("missing", ["HAKI_PROJECT_ID"])
def test_haki_mcp_needs_the_project(missing: str, haki_server: Server):
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAKI_")}
    env["HAKI_API_KEY"] = haki_server.key
    done = subprocess.run([sys.executable, "-m", "haki_local.cli", "mcp"], env=env,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and missing in done.stderr
