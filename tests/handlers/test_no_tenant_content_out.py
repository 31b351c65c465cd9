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

from haki.db import Database
from haki.keys import create_key
from haki.memory import MemoryWriter
from haki.models import FactRecord, MemoryDocument

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
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

    import functions.context.app as context_app
    from haki.db import Database
    from tests.handlers.conftest import FakeLambdaContext, api_event

    url, key, body = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    context_app.db = Database(url)
    result = context_app.handler(
        api_event("POST", "/v1/context", key=key, body=body), FakeLambdaContext())
    print("RESULT " + json.dumps({"status": result["statusCode"], "body": result["body"],
                                  "xray": emitter.entities}))
""")


def test_context_call_leaves_no_query_packet_or_subject_in_logs_or_traces(
    owner_db: Database, db_urls: dict, project_id: str, embedder: object,
    tmp_path: Path,
) -> None:
    secret_fact = f"secret-fact-{uuid.uuid4().hex[:8]} lives at 12 rue Cachée"
    secret_query = f"where does secret-query-{uuid.uuid4().hex[:8]} live?"
    subject = f"jane.doe.{uuid.uuid4().hex[:6]}@example.com"
    MemoryWriter(owner_db, embedder).write(MemoryDocument(facts=[FactRecord(  # type: ignore[arg-type]
        project_id=project_id, subject_id=subject, predicate="address", value=secret_fact)]))
    key = create_key(owner_db, org_id="org", project_id=project_id, label="t",
                     create_project=True).key
    body = {"project_id": project_id, "subject_id": subject, "query": secret_query,
            "purpose": "test"}
    env = {"LAMBDA_TASK_ROOT": str(tmp_path), "AWS_LAMBDA_FUNCTION_NAME": "haki-test",
           "_X_AMZN_TRACE_ID": "Root=1-5759e988-bd862e3fe1be46a994272793;"
                               "Parent=53995c3f42cd8ad8;Sampled=1",
           "AWS_REGION": "eu-west-3", "PATH": "/usr/bin:/bin"}
    from haki.db import Role
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, db_urls[Role.APP], key, json.dumps(body)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result_line = next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))
    result = json.loads(result_line.removeprefix("RESULT "))
    served = json.loads(result["body"])["packet"]["facts"]
    assert result["status"] == 200 and served[0]["value"] == secret_fact  # it was served...
    logs = done.stdout.replace(result_line, "") + done.stderr
    traces = "\n".join(result["xray"])
    # ...the segments and logs exist (the test could see a leak)...
    assert "## handler" in traces and "app.post_context" in traces, traces[:3000]
    assert '"context served"' in logs
    # ...and carry none of the tenant's content.
    for text in (secret_fact, secret_query, subject):
        for leaked in (text, json.dumps(text)[1:-1], text.split()[0]):
            assert leaked not in logs, leaked
            assert leaked not in traces, leaked
