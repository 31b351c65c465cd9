"""``haki-mcp`` (the Python SDK's MCP server, also run as ``haki mcp``) driven by the official
MCP SDK's own client over stdio (the server runs as a subprocess, exactly as an agent host
starts it) against the clients' ``haki serve``."""

import asyncio
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from haki_local.demo import DEMO_PROJECT, DEMO_SUBJECT
from tests.clients.stub import closed_port_url
from tests.e2e.conftest import Server

QUERY = "Which language should we use when writing to Marie about her invoice?"
#: The SDK's console script, installed beside this interpreter.
HAKI_MCP = str(Path(sys.executable).parent / "haki-mcp")
#: The service's command line running the same server.
HAKI_CLI_MCP = [sys.executable, "-m", "haki_local.cli", "mcp"]
READ_TOOLS = {"recall", "inspect", "list_facts", "list_conflicts", "list_episodes",
              "list_subjects"}
WRITE_TOOLS = {"remember", "record_fact", "forget", "resolve_conflict", "feedback"}


def without_haki_settings() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("HAKI_")}


def params(env: dict[str, str], command: list[str]) -> StdioServerParameters:
    return StdioServerParameters(command=command[0], args=command[1:],
                                 env={**without_haki_settings(), **env})


def run(env: dict[str, str], calls: list[tuple[str, dict[str, Any]]],
        command: list[str] | None = None) -> tuple[list, list]:
    async def session() -> tuple[list, list]:
        async with Client(params(env, command or [HAKI_MCP]),
                          read_timeout_seconds=60) as client:
            tools = (await client.list_tools()).tools
            return tools, [await client.call_tool(name, arguments) for name, arguments in calls]

    return asyncio.run(session())


def text(result: Any) -> str:
    return "".join(block.text for block in result.content if block.type == "text")


def settings(server: Server, **more: str) -> dict[str, str]:
    return {"HAKI_URL": server.url, "HAKI_API_KEY": server.key, "HAKI_PROJECT_ID": DEMO_PROJECT,
            **more}


def test_recall_and_inspect_over_stdio(haki_server: Server):
    env = settings(haki_server)
    tools, [recalled] = run(env, [("recall", {
        "subject_id": DEMO_SUBJECT, "query": QUERY, "purpose": "support_reply",
        "budget_tokens": 200})])
    assert {tool.name for tool in tools} == READ_TOOLS | WRITE_TOOLS
    recall_tool = next(tool for tool in tools if tool.name == "recall")
    assert recall_tool.input_schema["required"] == ["query"]  # the subject may be HAKI_SUBJECT
    annotations = {tool.name: tool.annotations for tool in tools}
    assert all(annotations[name].read_only_hint for name in READ_TOOLS)
    assert not any(annotations[name].read_only_hint for name in WRITE_TOOLS)
    assert not recalled.is_error
    data = recalled.structured_content
    assert data["memory"].startswith("<haki_memory>\n[f1] ") and data["trace_id"]
    assert data["token_count"] <= 200 and data["warnings"]
    assert text(recalled).startswith(data["memory"])
    assert text(recalled).endswith(f"trace_id: {data['trace_id']}")

    _, [inspected, missing] = run(env, [
        ("inspect", {"trace_id": data["trace_id"]}),  # trace ids are unique: no subject
        ("inspect", {"trace_id": "3fdb9157-2449-4afe-a59b-5c5b0c621f5a"})])
    trace = inspected.structured_content
    assert not inspected.is_error and trace["query"] == QUERY
    assert trace["purpose"] == "support_reply" and trace["token_count"] == data["token_count"]
    assert trace["packet"]["warnings"] == data["warnings"]
    served = {f["predicate"] for f in trace["packet"]["facts"]}
    assert "preferred_language" in served
    assert {d["id"] for d in trace["decisions"] if d["action"] == "included"} >= {
        f["id"] for f in trace["packet"]["facts"]}
    assert {d["action"] for d in trace["decisions"]} >= {"included", "blocked"}
    assert missing.is_error and "trace_not_found" in text(missing)


def test_remember_record_recall_and_forget_over_stdio(haki_server: Server):
    who = f"mcp-{uuid.uuid4().hex[:10]}"
    env = settings(haki_server, HAKI_SUBJECT=who)  # no call below names the subject
    text_said = "Je serai absente du 3 au 21 mars : écrivez à Julie Martin pour la facture."
    tools, [remembered, again, recorded, recalled, forgotten, after] = run(env, [
        ("remember", {"text": text_said, "idempotency_key": f"{who}-1"}),
        ("remember", {"text": text_said, "idempotency_key": f"{who}-1"}),
        ("record_fact", {"predicate": "preferred_language", "value": "fr", "confidence": 0.9}),
        ("recall", {"query": "Qui contacter pour la facture ?"}),
        ("forget", {"mode": "delete"}),
        ("recall", {"query": "Qui contacter pour la facture ?"}),
    ])
    annotations = {tool.name: tool.annotations for tool in tools}
    assert annotations["forget"].destructive_hint and not annotations["remember"].read_only_hint
    assert not any(r.is_error for r in (remembered, again, recorded, recalled, forgotten))
    event_id = remembered.structured_content["event_id"]
    assert again.structured_content == {"event_id": event_id, "deduplicated": True}
    assert recorded.structured_content["outcome"] == "created"
    memory = recalled.structured_content["memory"]
    assert "Julie Martin" in memory and "preferred language: fr" in memory
    # The default purpose: nothing is hidden, so the answer reads ok.
    assert recalled.structured_content["status"] == "ok"
    assert recalled.structured_content["warnings"] == []
    assert forgotten.structured_content["target"] == "subject"
    assert forgotten.structured_content["counts"]["facts"] == 1
    assert after.structured_content["memory"] == ""


def test_forget_disable_then_enable_serves_the_subject_again(haki_server: Server):
    who = f"mcp-{uuid.uuid4().hex[:10]}"
    said = "Please always call me on my mobile, never at the office."
    query = "How should we call her?"
    _, [_, disabled, hidden, enabled, served] = run(settings(haki_server, HAKI_SUBJECT=who), [
        ("remember", {"text": said, "idempotency_key": f"{who}-1"}),
        ("forget", {"mode": "disable"}),
        ("recall", {"query": query}),
        ("forget", {"mode": "enable"}),
        ("recall", {"query": query}),
    ])
    assert disabled.structured_content["mode"] == "disable"
    assert said not in hidden.structured_content["memory"]
    assert not enabled.is_error and enabled.structured_content["mode"] == "enable"
    assert said in served.structured_content["memory"]


def test_remember_takes_a_thread_and_recall_narrows_to_it(haki_server: Server):
    who = f"mcp-{uuid.uuid4().hex[:10]}"
    _, [_, _, recalled] = run(settings(haki_server), [
        ("remember", {"subject_id": who, "text": "Book the quiet carriage to Lyon.",
                      "role": "user", "thread_id": "chat-1", "idempotency_key": "m-1"}),
        ("remember", {"subject_id": who, "text": "Asked about a train to Lyon by phone.",
                      "thread_id": "phone"}),
        ("recall", {"subject_id": who, "query": "train to Lyon", "thread_id": "chat-1"}),
    ])
    memory = recalled.structured_content["memory"].split("\n")
    assert any(line.endswith(" · chat-1") for line in memory)
    assert any(line.endswith(" user: Book the quiet carriage to Lyon.") for line in memory)
    assert not any("by phone" in line for line in memory)
    assert recalled.structured_content["token_count"] == len("\n".join(memory)) // 4


def test_remember_says_who_said_a_message_and_recall_shows_it(haki_server: Server):
    who = f"mcp-{uuid.uuid4().hex[:10]}"
    said = "I just moved to Porto, please send my invoices there."
    message = {"subject_id": who, "text": said, "role": "user", "name": "Ana",
               "idempotency_key": "m-1", "occurred_at": "2026-11-20T10:07:41Z"}
    _, [remembered, again, answered, recalled, nameless, other_kind] = run(
        settings(haki_server), [
            ("remember", message),
            ("remember", message),
            ("remember", {"subject_id": who, "role": "assistant", "idempotency_key": "m-2",
                          "text": "Noted: your invoices will go to your Porto address."}),
            ("recall", {"subject_id": who, "query": "Where should Ana's invoices be sent? "
                                                    "Porto address", "budget_tokens": 4000}),
            ("remember", {"subject_id": who, "text": said, "name": "Ana"}),
            ("remember", {"subject_id": who, "text": said, "role": "user",
                          "kind": "support.ticket"}),
        ])
    assert not any(r.is_error for r in (remembered, again, answered, recalled))
    event_id = remembered.structured_content["event_id"]
    assert remembered.structured_content["deduplicated"] is False
    assert again.structured_content == {"event_id": event_id, "deduplicated": True}
    assert answered.structured_content["event_id"] != event_id
    memory = recalled.structured_content["memory"].split("\n")
    assert "## 2026-11-20" in memory and f"[e1] Ana: {said}" in memory
    assert nameless.is_error and text(nameless).startswith("validation_error: name goes with role")
    assert other_kind.is_error and text(other_kind).startswith("validation_error: ")
    assert "support.ticket" in text(other_kind)


def test_facts_and_conflicts_are_listed_and_a_conflict_resolved(haki_server: Server):
    who = f"mcp-{uuid.uuid4().hex[:10]}"
    env = settings(haki_server)
    _, [lyon, paris, hidden, conflicts] = run(env, [
        ("record_fact", {"subject_id": who, "predicate": "lives_in", "value": "Lyon"}),
        ("record_fact", {"subject_id": who, "predicate": "lives_in", "value": "Paris"}),
        ("recall", {"subject_id": who, "query": "Where does she live?"}),
        ("list_conflicts", {"subject_id": who}),
    ])
    assert paris.structured_content["outcome"] == "conflict"
    assert hidden.structured_content["status"] == "degraded"
    assert "Paris" not in hidden.structured_content["memory"]
    [conflict] = conflicts.structured_content["conflicts"]
    assert conflict["id"] == paris.structured_content["conflict_id"]
    assert {f["id"] for f in conflict["facts"]} == {lyon.structured_content["fact_id"],
                                                   paris.structured_content["fact_id"]}

    keep = paris.structured_content["fact_id"]
    _, [resolved, superseded, active, still_open, served] = run(env, [
        ("resolve_conflict", {"conflict_id": conflict["id"], "keep_fact_id": keep}),
        ("list_facts", {"subject_id": who, "status": "superseded"}),
        ("list_facts", {"subject_id": who}),
        ("list_conflicts", {"subject_id": who}),
        ("recall", {"subject_id": who, "query": "Where does she live?"}),
    ])
    assert resolved.structured_content["kept_fact_id"] == keep
    assert resolved.structured_content["superseded_fact_ids"] == [
        lyon.structured_content["fact_id"]]
    assert [(f["value"], f["status"]) for f in superseded.structured_content["facts"]] == [
        ("Lyon", "superseded")]
    assert [(f["id"], f["value"]) for f in active.structured_content["facts"]] == [
        (keep, "Paris")]
    assert still_open.structured_content["conflicts"] == []
    assert "Paris" in served.structured_content["memory"]
    assert served.structured_content["status"] == "ok"


def test_argument_errors_are_plain_text(haki_server: Server):
    _, [wrong_type, no_query, no_subject, bad_status, too_early] = run(settings(haki_server), [
        ("recall", {"subject_id": DEMO_SUBJECT, "query": QUERY, "budget_tokens": "lots"}),
        ("recall", {"subject_id": DEMO_SUBJECT}),
        ("recall", {"query": QUERY}),
        ("list_facts", {"subject_id": DEMO_SUBJECT, "status": "forgotten"}),
        # Within what a datetime holds, before what the service stores: the API refuses it.
        ("remember", {"subject_id": DEMO_SUBJECT, "text": "hello",
                      "occurred_at": "1970-01-01T00:30:00+01:00"}),
    ])
    assert "occurred_at" in text(too_early)
    for refused in (wrong_type, no_query, no_subject, bad_status, too_early):
        assert refused.is_error
        assert "http" not in text(refused) and "pydantic" not in text(refused).lower()
        assert text(refused).startswith("validation_error: ")
    assert "budget_tokens: " in text(wrong_type) and "integer" in text(wrong_type)
    assert "query: " in text(no_query) and "required" in text(no_query).lower()
    assert "subject_id is required" in text(no_subject) and "HAKI_SUBJECT" in text(no_subject)
    assert "status: " in text(bad_status)


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
    assert refused.is_error and text(refused).startswith("forbidden_scope: this API key")


def test_haki_mcp_of_the_service_runs_the_same_server(haki_server: Server):
    tools, [recalled] = run(settings(haki_server), [
        ("recall", {"subject_id": DEMO_SUBJECT, "query": QUERY})], command=HAKI_CLI_MCP)
    assert {tool.name for tool in tools} == READ_TOOLS | WRITE_TOOLS
    assert not recalled.is_error and recalled.structured_content["trace_id"]


@pytest.mark.parametrize("command", [[HAKI_MCP], HAKI_CLI_MCP], ids=["haki-mcp", "haki mcp"])
def test_help_documents_the_variables(command: list[str]):
    done = subprocess.run([*command, "--help"], env=without_haki_settings(),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    environment = done.stdout.split("\nenvironment:\n")[1]
    for name in ("HAKI_URL", "HAKI_API_KEY", "HAKI_PROJECT_ID", "HAKI_SUBJECT"):
        assert f"  {name} " in environment
    assert "list_conflicts" in done.stdout and "resolve_conflict" in done.stdout


@pytest.mark.parametrize("command", [[HAKI_MCP], HAKI_CLI_MCP], ids=["haki-mcp", "haki mcp"])
def test_haki_mcp_says_what_is_missing(command: list[str]):
    done = subprocess.run(command, env=without_haki_settings(), capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and done.stdout == ""
    assert "set HAKI_API_KEY (" in done.stderr and "--help" in done.stderr


def test_haki_mcp_needs_no_project_the_key_names_it(haki_server: Server):
    env = {"HAKI_URL": haki_server.url, "HAKI_API_KEY": haki_server.key}
    _, [recalled, subjects] = run(env, [
        ("recall", {"subject_id": DEMO_SUBJECT, "query": QUERY}),
        ("list_subjects", {"limit": 200})])
    assert not recalled.is_error and recalled.structured_content["trace_id"]
    assert not subjects.is_error
    listed = {s["subject_id"]: s for s in subjects.structured_content["subjects"]}
    assert listed[DEMO_SUBJECT]["facts"] > 0 and listed[DEMO_SUBJECT]["last_activity_at"]


def test_remember_twice_stores_one_event_and_episodes_are_listed_and_searched(
        haki_server: Server):
    who = f"mcp-{uuid.uuid4().hex[:10]}"
    said = ["Invoices go to Porto now.", "My mobile is the best number.",
            "Please write in Portuguese."]
    calls: list[tuple[str, dict[str, Any]]] = [
        ("remember", {"text": said[0]}), ("remember", {"text": said[0]}),
        ("remember", {"text": said[1], "role": "user", "name": "Ana"}),
        ("remember", {"text": said[1], "role": "user", "name": "Ana"}),
        # Another moment is another event, even with the same words.
        ("remember", {"text": said[0], "occurred_at": "2026-11-30T09:00:00Z"}),
        ("remember", {"text": said[2]}),
        ("list_episodes", {}), ("list_episodes", {"limit": 2}),
        ("list_episodes", {"contains": "PORTO"}),
        ("list_episodes", {"contains": "porto", "limit": 1}),
        ("list_episodes", {"contains": "nowhere"}),
    ]
    _, results = run(settings(haki_server, HAKI_SUBJECT=who), calls)
    assert not any(r.is_error for r in results), [text(r) for r in results if r.is_error]
    first, again, message, message_again, dated, _ = (r.structured_content for r in results[:6])
    assert again == {"event_id": first["event_id"], "deduplicated": True}
    assert message_again == {"event_id": message["event_id"], "deduplicated": True}
    assert not first["deduplicated"] and not dated["deduplicated"]
    assert dated["event_id"] != first["event_id"]
    everything, page, porto, one, nowhere = (r.structured_content for r in results[6:])
    texts = [e["payload"]["text"] for e in everything["episodes"]]
    assert sorted(texts) == sorted([said[0], said[1], said[0], said[2]])  # 4 events, not 6
    assert everything["next_cursor"] is None
    assert len(page["episodes"]) == 2 and page["next_cursor"]
    assert [e["payload"]["text"] for e in porto["episodes"]] == [said[0], said[0]]
    assert porto["searched"] == 4 and porto["next_cursor"] is None
    assert len(one["episodes"]) >= 1 and nowhere["episodes"] == []
