"""No tenant content leaves through logs or X-Ray: a context call runs in a fresh interpreter
that looks like Lambda (``LAMBDA_TASK_ROOT``, a sampled trace header) with the X-Ray emitter
replaced by one that keeps every entity it is handed; the query, the stored fact and the
subject id must appear in none of them, nor in anything the function printed, while the
segments and log lines themselves are there (so the test can fail)."""

import json
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

from haki.db import Database, Role
from haki.embedding import Embedder
from haki.models import FactRecord
from haki.settings import get_settings
from haki_local.admin import create_key
from haki_local.documents import MemoryDocument
from haki_local.writer import MemoryWriter

ROOT = Path(__file__).resolve().parents[2]

#: The start of each script: X-Ray segments kept in ``emitter.entities``, then the imports.
PREAMBLE = textwrap.dedent("""
    import json, sys
    from aws_xray_sdk.core import xray_recorder

    class KeepingEmitter:
        entities = []
        def send_entity(self, entity):
            self.entities.append(entity.serialize())
        def set_daemon_address(self, address):
            pass

    emitter = KeepingEmitter()
    # Stream every finished subsegment at once (Lambda batches them; the content is the same).
    xray_recorder.configure(emitter=emitter, sampling=False, context_missing="LOG_ERROR",
                            streaming_threshold=0)

    from haki.db import Database
    from tests.handlers.conftest import FakeLambdaContext, api_event
""")

SCRIPT = PREAMBLE + textwrap.dedent("""
    import functions.context.app as context_app

    url, key, body = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    context_app.db = Database(url)
    result = context_app.handler(
        api_event("POST", "/v1/context", key=key, body=body), FakeLambdaContext())
    print("RESULT " + json.dumps({"status": result["statusCode"], "body": result["body"],
                                  "xray": emitter.entities}))
""")


def _run_in_lambda(script: str, url: str, key: str, argument: object,
                   task_root: Path) -> tuple[str, dict[str, Any]]:
    """``script`` in a fresh interpreter set up as a traced Lambda container; all else it
    wrote (its logs), and the result it printed."""
    env = {"LAMBDA_TASK_ROOT": str(task_root), "AWS_LAMBDA_FUNCTION_NAME": "haki-test",
           "_X_AMZN_TRACE_ID": "Root=1-5759e988-bd862e3fe1be46a994272793;"
                               "Parent=53995c3f42cd8ad8;Sampled=1",
           "AWS_REGION": "eu-west-3", "PATH": "/usr/bin:/bin",
           # Where the layer's models would be: the checkout's.
           "HAKI_MODEL_DIR": str(get_settings().model_dir)}
    done = subprocess.run([sys.executable, "-c", script, url, key, json.dumps(argument)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result_line = next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))
    logs = done.stdout.replace(result_line, "") + done.stderr
    return logs, json.loads(result_line.removeprefix("RESULT "))


def test_context_call_leaves_no_query_packet_or_subject_in_logs_or_traces(
    owner_db: Database, db_urls: dict, project_id: str, embedder: Embedder,
    tmp_path: Path,
) -> None:
    secret_fact = f"secret-fact-{uuid.uuid4().hex[:8]} lives at 12 rue Cachée"
    secret_query = f"where does secret-query-{uuid.uuid4().hex[:8]} live?"
    subject = f"jane.doe.{uuid.uuid4().hex[:6]}@example.com"
    MemoryWriter(owner_db, embedder).write(MemoryDocument(facts=[FactRecord(
        project_id=project_id, subject_id=subject, predicate="address", value=secret_fact)]))
    key = create_key(owner_db, org_id="org", project_id=project_id, label="t",
                     create_project=True).key
    body = {"project_id": project_id, "subject_id": subject, "query": secret_query,
            "purpose": "test"}
    logs, result = _run_in_lambda(SCRIPT, db_urls[Role.APP], key, body, tmp_path)
    served = json.loads(result["body"])["packet"]["facts"]
    assert result["status"] == 200 and served[0]["value"] == secret_fact  # it was served...
    traces = "\n".join(result["xray"])
    # ...the segments and logs exist (the test could see a leak)...
    assert "## handler" in traces and "app.post_context" in traces, traces[:3000]
    assert '"context served"' in logs
    # ...and carry none of the tenant's content.
    for text in (secret_fact, secret_query, subject):
        for leaked in (text, json.dumps(text)[1:-1], text.split()[0]):
            assert leaked not in logs, leaked
            assert leaked not in traces, leaked


WRITE_SCRIPT = PREAMBLE + textwrap.dedent("""
    import functions.ingest.app as ingest_app
    import functions.memory.app as memory_app

    url, key, calls = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    ingest_app.db = memory_app.db = Database(url)
    statuses = []
    for function, method, path, kwargs in calls:
        module = ingest_app if function == "ingest" else memory_app
        result = module.handler(api_event(method, path, key=key, **kwargs), FakeLambdaContext())
        statuses.append([result["statusCode"], result["body"]])
    print("RESULT " + json.dumps({"statuses": statuses, "xray": emitter.entities}))
""")


def test_writes_leave_no_payload_value_or_subject_in_logs_or_traces(
    owner_db: Database, db_urls: dict, project_id: str, tmp_path: Path,
) -> None:
    """Events, facts (one refused, whose message names a record), a listing and an erasure
    of a subject named by an e-mail address: the content goes in and out through the bodies
    only."""
    secret_payload = f"secret-payload-{uuid.uuid4().hex[:8]} my card ends 4242"
    secret_value = f"secret-value-{uuid.uuid4().hex[:8]} 12 rue Cachée"
    subject = f"jane.doe.{uuid.uuid4().hex[:6]}@example.com"
    key = create_key(owner_db, org_id="org", project_id=project_id, label="t",
                     create_project=True).key
    scope = {"project_id": project_id, "subject_id": subject}
    calls = [
        ("ingest", "POST", "/v1/events", {"body": {"project_id": project_id, "events": [
            {"subject_id": subject, "kind": "message", "payload": {"text": secret_payload},
             "idempotency_key": secret_payload}]}}),
        ("ingest", "POST", "/v1/facts", {"body": {"project_id": project_id, "facts": [
            {"subject_id": subject, "predicate": "address", "value": secret_value}]}}),
        ("ingest", "POST", "/v1/facts", {"body": {"project_id": project_id, "facts": [
            {"subject_id": subject, "predicate": "address", "value": secret_value,
             "source_event_ids": [str(uuid.uuid4())]}]}}),
        ("memory", "GET", "/v1/facts", {"query": scope}),
        ("memory", "POST", "/v1/forget", {"body": {**scope, "mode": "delete"}}),
    ]
    logs, result = _run_in_lambda(WRITE_SCRIPT, db_urls[Role.APP], key, calls, tmp_path)
    assert [s for s, _ in result["statuses"]] == [201, 201, 422, 200, 200]
    listed = json.loads(result["statuses"][3][1])["facts"]
    assert [f["value"] for f in listed] == [secret_value]  # the listing served it...
    traces = "\n".join(result["xray"])
    assert "app.post_events" in traces and "app.post_forget" in traces, traces[:3000]
    assert '"forgotten"' in logs and "unknown_reference" in logs
    for text in (secret_payload, secret_value, subject):
        for leaked in (text, json.dumps(text)[1:-1], text.split()[0]):
            assert leaked not in logs, leaked
            assert leaked not in traces, leaked
