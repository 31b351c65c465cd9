"""The local API over real HTTP: every endpoint, every error code, inspect after context,
stats before and after aggregation, and a second start that reuses the data."""

import re
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg

from haki.stats import GRACE
from haki_local.demo import DEMO_PROJECT, DEMO_SUBJECT
from tests.e2e.conftest import Client, Server, create_key, run_cli, serving


def _context(client: Client, key: str | None, **overrides: Any) -> Any:
    body = {"project_id": DEMO_PROJECT, "subject_id": DEMO_SUBJECT,
            "query": "Où habite Marie et comment la contacter ?", "purpose": "support_reply",
            **overrides}
    return client.request("POST", "/v1/context", key=key, body=body)


def _scope(subject: str = DEMO_SUBJECT, project: str = DEMO_PROJECT) -> str:
    return f"project_id={project}&subject_id={subject}"


def test_context_serves_the_demo_with_its_rules(client: Client, server: Server) -> None:
    reply = _context(client, server.key)
    assert reply.status == 200
    packet = reply.json["packet"]
    assert packet["facts"] and reply.json["token_count"] > 0
    # The demo subject has an open conflict over her address: never served, always flagged.
    assert packet["status"] == "degraded"
    assert any(w.startswith("open_conflict") for w in packet["warnings"])
    assert not any(f["predicate"] == "lives_in" for f in packet["facts"])
    assert reply.headers["x-amzn-RequestId"]


def test_inspect_after_context_returns_the_same_packet_and_one_decision_per_candidate(
    client: Client, server: Server, owner: psycopg.Connection
) -> None:
    served = _context(client, server.key, budget_tokens=120)
    trace_id = served.json["trace_id"]
    inspected = client.request("GET", f"/v1/inspect/{trace_id}?{_scope()}", key=server.key)
    assert inspected.status == 200
    assert inspected.json["packet"] == served.json["packet"]
    assert inspected.json["budget_tokens"] == 120
    decisions = inspected.json["decisions"]
    candidates = owner.execute(
        "SELECT candidates FROM context_calls WHERE trace_id = %s", (trace_id,)).fetchone()
    assert candidates == (len(decisions),)
    ids = [d["fact_id"] or d["event_id"] for d in decisions]
    assert len(set(ids)) == len(ids)
    included = {d["fact_id"] for d in decisions if d["action"] == "included" and d["fact_id"]}
    assert included == {f["id"] for f in served.json["packet"]["facts"]}
    assert any(d["reason_code"] == "conflict_open" for d in decisions)


def test_every_error_code_over_http(client: Client, server: Server, data_dir: Path) -> None:
    def code(reply: Any) -> tuple[int, str]:
        assert set(reply.json) == {"error"}
        return reply.status, reply.json["error"]["code"]

    unknown = "hk_" + "Z" * 43
    assert code(_context(client, None)) == (401, "unauthorized")
    assert code(_context(client, unknown)) == (401, "unauthorized")
    assert code(_context(client, server.key, project_id="atelier-voyage")) == (
        403, "forbidden_scope")
    assert code(_context(client, server.key, subject_id="")) == (422, "missing_scope")
    assert code(_context(client, server.key, budget_tokens=0)) == (422, "budget_exceeded")
    assert code(_context(client, server.key, colour="red")) == (422, "validation_error")
    assert code(client.request("POST", "/v1/context", key=server.key, raw=b"{oops")) == (
        422, "validation_error")
    assert code(client.request("POST", "/v1/context", key=server.key,
                               raw=b'{"query": "' + b"a" * 300_000 + b'"}')) == (
        413, "payload_too_large")
    assert code(client.request("POST", "/v1/context", key=server.key, raw=b"a=b",
                               content_type="application/x-www-form-urlencoded")) == (
        415, "validation_error")
    assert code(client.request("GET", f"/v1/inspect/{uuid.uuid4()}?{_scope()}",
                               key=server.key)) == (404, "trace_not_found")
    # A trace id no call can have is the unknown id's 404, whatever its text.
    assert code(client.request("GET", f"/v1/inspect/nope?{_scope()}", key=server.key)) == (
        404, "trace_not_found")
    assert code(client.request("GET", "/v1/stats/overview?project_id=", key=server.key)) == (
        422, "missing_scope")
    assert code(client.request("GET", "/v1/unknown", key=server.key)) == (404, "not_found")

    key, key_id = create_key(data_dir, "acme", DEMO_PROJECT, "--label", "to revoke")
    assert _context(client, key).status == 200
    listing = run_cli(data_dir, "keys", "list")
    assert key_id in listing and key not in listing and key[:10] + "…" in listing
    run_cli(data_dir, "keys", "revoke", key_id)
    assert code(_context(client, key)) == (401, "unauthorized")


def _raw_figures(owner: psycopg.Connection) -> tuple[int, int, int]:
    row = owner.execute(
        "SELECT count(*), count(*) FILTER (WHERE facts_served > 0), "
        "coalesce(sum(token_count), 0) FROM context_calls WHERE project_id = %s",
        (DEMO_PROJECT,)).fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2])


def test_stats_before_and_after_aggregation(
    client: Client, server: Server, owner: psycopg.Connection, data_dir: Path
) -> None:
    for subject in (DEMO_SUBJECT, "user-john", "user-nobody"):
        assert _context(client, server.key, subject_id=subject).status == 200
    path = f"/v1/stats/overview?project_id={DEMO_PROJECT}"
    before = client.request("GET", path, key=server.key).json
    calls, with_facts, tokens = _raw_figures(owner)
    assert before["recall_count"] == calls and before["context_tokens_served"] == tokens
    assert before["injection_rate"] == before["hit_rate"] == with_facts / calls
    assert before["active_facts"] > 0 and before["open_conflicts"] >= 1

    # Let the calls age past the grace period, as the next scheduled runs would see them.
    owner.execute("UPDATE context_calls SET created_at = created_at - %s",
                  (GRACE + timedelta(hours=2),))
    aged = client.request("GET", path, key=server.key).json
    assert aged == before
    printed = run_cli(data_dir, "stats", "aggregate")
    assert re.search(r"rolled [1-9]\d* call", printed), printed
    after = client.request("GET", path, key=server.key).json
    assert after == before
    rerun = run_cli(data_dir, "stats", "aggregate", "--rerun-from", "2000-01-01")
    assert re.search(r"rolled [1-9]\d* call", rerun), rerun
    assert client.request("GET", path, key=server.key).json == before
    rolled = owner.execute("SELECT coalesce(sum(calls), 0) FROM stats_rollups "
                           "WHERE project_id = %s", (DEMO_PROJECT,)).fetchone()
    assert rolled == (calls,)


def test_a_second_start_reuses_the_data_and_the_key(server: Server, data_dir: Path) -> None:
    with serving(data_dir) as second:
        assert second.key == server.key
        assert any(line == "demo data: already loaded" for line in second.lines)
        assert Client(second.url).request(
            "GET", f"/v1/stats/overview?project_id={DEMO_PROJECT}", key=second.key).status == 200
    assert (data_dir / "dev-key").stat().st_mode & 0o777 == 0o600
