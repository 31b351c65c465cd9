"""The feedback loop end to end over ``haki serve``: memory written and calls made with the SDK,
feedback from the SDK (the handles a model cites mapped back to ids) and from ``haki-mcp``
(handles, over stdio), the series showing it, the calls exported as a labelled set by the API
and by ``haki eval-set export`` (the same set), and ``haki eval`` on the export reproducing the
served recall of those calls."""

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import UUID

from haki_client import ContextResponse, HakiClient, cited_ids
from haki_local.demo import DEMO_PROJECT
from haki_local.evaluation import EvalQuery, coverage
from tests.clients.test_mcp import run as run_mcp
from tests.clients.test_mcp import settings as mcp_settings
from tests.e2e.conftest import Client, Server, haki_env, run_cli

SUBJECT = "loop-ana"


def _served_recall(answer: ContextResponse, used: list[UUID], missing: list[UUID],
                   facts: set[UUID]) -> float:
    """The call's recall by ``haki eval``'s coverage rules, over what it served."""
    expected = [*used, *missing]
    query = EvalQuery(project_id=DEMO_PROJECT, subject_id=SUBJECT, query="q",
                      expected_fact_ids=[i for i in expected if i in facts],
                      expected_event_ids=[i for i in expected if i not in facts])
    return coverage(query, answer.packet) / query.expected


def test_calls_feedback_series_export_and_eval(server: Server, client: Client, data_dir: Path,
                                               tmp_path: Path) -> None:
    since = datetime.now(UTC) - timedelta(seconds=1)
    with HakiClient(server.url, server.key, project_id=DEMO_PROJECT) as haki:
        haki.write_messages(SUBJECT, [
            {"role": "user", "name": "Ana", "message_id": "loop-1",
             "content": "I moved to Porto, please send my invoices there."}])
        facts = [haki.record_fact(SUBJECT, predicate, value).id for predicate, value
                 in [("preferred_language", "Portuguese"), ("billing_city", "Porto"),
                     ("pet", "a parrot named Kiwi"), ("plan", "Enterprise, yearly")]]

        # A call whose small budget leaves out what the answer needed; the model cites [f1].
        first = haki.context(SUBJECT, "Which language and which plan for her renewal letter?",
                             purpose="support_reply", budget_tokens=14, render=True)
        used_first = cited_ids("Write in the language she prefers [f1] [f9].", first.packet)
        assert used_first == [first.packet.facts[0].id]
        missing_first = [i for i in facts if i not in {f.id for f in first.packet.facts}][:2]
        assert missing_first, first.packet
        haki.feedback(first.trace_id, subject_id=SUBJECT, used=used_first,
                      missing=missing_first, verdict="unhelpful")

        second = haki.context(SUBJECT, "Where should the invoices be sent?",
                              purpose="support_reply", render=True)
    # The second call's feedback comes from haki-mcp, with a handle.
    _, [given] = run_mcp(mcp_settings(server), [("feedback", {
        "trace_id": str(second.trace_id), "subject_id": SUBJECT, "used": ["f1"],
        "verdict": "helpful"})])
    assert not given.is_error, given.content
    used_second = [second.packet.facts[0].id]
    assert given.structured_content["used"] == [str(i) for i in used_second]

    series = client.request(
        "GET", f"/v1/stats/series?project_id={DEMO_PROJECT}&subject_id={SUBJECT}&days=1"
        "&granularity=day", key=server.key).json
    today = series["points"][-1]
    assert today["calls_with_feedback"] == 2 and today["calls_with_missing"] == 1
    assert today["items_used"] == 2
    served = len(first.packet.facts) + len(first.packet.episodes) + len(
        second.packet.facts) + len(second.packet.episodes)
    assert today["used_share"] == 2 / served
    assert today["tokens_per_used_item"] == (first.token_count + second.token_count) / 2

    # The set, by the API and by the CLI: the same queries.
    window = f"since={since.isoformat().replace('+00:00', 'Z')}"
    exported = client.request("GET", f"/v1/eval-set?project_id={DEMO_PROJECT}&{window}",
                              key=server.key).json
    out = tmp_path / "traces.json"
    run_cli(data_dir, "eval-set", "export", "--project", DEMO_PROJECT, "--since",
            since.isoformat(), "--out", str(out))
    from_cli = json.loads(out.read_text(encoding="utf-8"))
    assert from_cli["queries"] == exported["queries"]
    assert [q["subject_id"] for q in from_cli["queries"]] == [SUBJECT, SUBJECT]
    assert [q["category"] for q in from_cli["queries"]] == ["unhelpful", "helpful"]

    done = subprocess.run([sys.executable, "-m", "haki_local.cli", "eval", str(out)],
                          env=haki_env(data_dir), capture_output=True, text=True, timeout=600,
                          check=True)
    report = json.loads(done.stdout)["budgets"]["900"]
    recalls = [_served_recall(first, used_first, missing_first, set(facts)),
               _served_recall(second, used_second, [], set(facts))]
    assert report["queries"] == 2
    assert report["mean_recall"] == round(sum(recalls) / 2, 4) < 1.0
