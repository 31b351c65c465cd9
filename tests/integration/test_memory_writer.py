"""The memory writer and the ``haki load`` / ``haki context`` commands on a real database."""

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest

from haki.db import Database, Role
from haki.embedding import Embedder
from haki.errors import ValidationFailed
from haki.memory.conflicts import resolve_conflict
from haki_local.documents import parse_document_text
from haki_local.writer import MemoryWriter


def _doc(project_id: str, **sections: list[dict]) -> str:
    for records in sections.values():
        for record in records:
            record.setdefault("project_id", project_id)
            record.setdefault("subject_id", "alice")
    return json.dumps(sections)


def test_write_as_the_owner_with_embeddings(
    owner_db: Database, embedder: Embedder, project_id: str, owner_conn: psycopg.Connection
) -> None:
    event_id = str(uuid.uuid4())
    text = _doc(project_id,
                events=[{"id": event_id, "kind": "call", "payload": {"text": "bonjour"}}],
                facts=[{"predicate": "lang", "value": "fr", "source_event_ids": [event_id]},
                       {"predicate": "city", "value": "Lyon"}])
    summary = MemoryWriter(owner_db, embedder).write(parse_document_text(text))
    assert (summary.facts, summary.events) == (2, 1)
    rows = owner_conn.execute(
        "SELECT predicate, source_event_ids, vector_norm(embedding) FROM facts "
        "WHERE project_id = %s ORDER BY predicate", (project_id,)).fetchall()
    assert [r[0] for r in rows] == ["city", "lang"]
    assert rows[1][1] == [uuid.UUID(event_id)]
    assert all(abs(r[2] - 1.0) < 1e-3 for r in rows)


def test_a_document_event_keeps_its_thread(
    owner_db: Database, embedder: Embedder, project_id: str, owner_conn: psycopg.Connection
) -> None:
    threaded, loose = str(uuid.uuid4()), str(uuid.uuid4())
    MemoryWriter(owner_db, embedder).write(parse_document_text(_doc(project_id, events=[
        {"id": threaded, "kind": "m", "thread_id": "chat-7", "payload": {"text": "hi"}},
        {"id": loose, "kind": "m", "payload": {"text": "hello"}}])))
    rows = dict(owner_conn.execute("SELECT id::text, thread_id FROM events WHERE project_id = %s",
                                   (project_id,)).fetchall())
    assert rows == {threaded: "chat-7", loose: None}


def test_upsert_updates_an_existing_fact(
    owner_db: Database, embedder: Embedder, project_id: str, owner_conn: psycopg.Connection
) -> None:
    fact_id = str(uuid.uuid4())
    writer = MemoryWriter(owner_db, embedder)
    writer.write(parse_document_text(_doc(
        project_id, facts=[{"id": fact_id, "predicate": "city", "value": "Lyon"}])))
    writer.write(parse_document_text(_doc(
        project_id, facts=[{"id": fact_id, "predicate": "city", "value": "Nantes",
                            "version": 2}])))
    assert owner_conn.execute("SELECT value, version FROM facts WHERE id = %s",
                              (fact_id,)).fetchall() == [("Nantes", 2)]


def test_a_failing_record_leaves_nothing_half_loaded(
    owner_db: Database, embedder: Embedder, project_id: str, owner_conn: psycopg.Connection
) -> None:
    text = _doc(project_id,
                events=[{"kind": "call", "payload": {}}],
                facts=[{"predicate": "ok", "value": 1},
                       {"predicate": "bad", "value": 2, "supersedes_id": str(uuid.uuid4())}])
    with pytest.raises(ValidationFailed, match="facts_supersedes_id_fkey"):
        MemoryWriter(owner_db, embedder).write(parse_document_text(text))
    for table in ("facts", "events"):
        count = owner_conn.execute(f"SELECT count(*) FROM {table} WHERE project_id = %s",
                                   (project_id,)).fetchone()
        assert count == (0,)


def test_conflicts_open_and_resolve(
    owner_db: Database, app_db: Database, embedder: Embedder, project_id: str,
    owner_conn: psycopg.Connection,
) -> None:
    a, b, c = (str(uuid.uuid4()) for _ in range(3))
    conflict_id = str(uuid.uuid4())
    text = _doc(project_id,
                facts=[{"id": a, "predicate": "city", "value": "Lyon"},
                       {"id": b, "predicate": "city", "value": "Nantes"},
                       {"id": c, "predicate": "city", "value": "Brest"}],
                conflicts=[{"id": conflict_id, "fact_ids": [a, b, c], "reason": "3 cities"}])
    summary = MemoryWriter(owner_db, embedder).write(parse_document_text(text))
    assert summary.conflicts_opened == 1
    with app_db.transaction(project_id) as conn, pytest.raises(ValidationFailed):
        resolve_conflict(conn, project_id, uuid.UUID(conflict_id), uuid.uuid4())
    with app_db.transaction(project_id) as conn:
        updated = resolve_conflict(conn, project_id, uuid.UUID(conflict_id), uuid.UUID(b))
    assert len(updated) == 3
    statuses = dict(owner_conn.execute(
        "SELECT id::text, status FROM facts WHERE project_id = %s", (project_id,)).fetchall())
    assert statuses == {a: "superseded", b: "active", c: "superseded"}
    assert owner_conn.execute("SELECT status FROM conflict_sets WHERE id = %s",
                              (conflict_id,)).fetchone() == ("resolved",)


def _cli(args: list[str], db_url: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HAKI_DATABASE_URL": db_url}
    return subprocess.run([sys.executable, "-m", "haki_local.cli", *args], env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def test_cli_load_then_context(db_urls: dict[Role, str], project_id: str,
                               tmp_path: Path) -> None:
    lines = [
        {"type": "fact", "project_id": project_id, "subject_id": "bob",
         "predicate": "invoice_language", "value": "Les factures sont en français"},
        {"type": "event", "project_id": project_id, "subject_id": "bob",
         "kind": "conversation.message", "payload": {"text": "Merci pour la facture"}},
    ]
    path = tmp_path / "memory.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines))
    # The runtime role cannot load: its security follows an API key, and `haki load` has none.
    refused = _cli(["load", str(path)], db_urls[Role.APP])
    assert refused.returncode == 2 and "forbidden_scope" in refused.stderr
    assert "Traceback" not in refused.stderr
    loaded = _cli(["load", str(path)], db_urls[Role.OWNER])  # an admin tool: the owner's URL
    assert loaded.returncode == 0, loaded.stderr
    assert json.loads(loaded.stdout) == {"facts": 1, "events": 1, "conflicts_opened": 0,
                                         "conflicts_resolved": 0}
    assert "loading memory.jsonl" in loaded.stderr  # the progress bar

    asked = _cli(["context", "--project", project_id, "--subject", "bob", "--purpose", "t",
                  "which language for invoices?"], db_urls[Role.OWNER])
    assert asked.returncode == 0, asked.stderr
    body = json.loads(asked.stdout)
    assert set(body) == {"packet", "token_count", "trace_id"}
    assert body["packet"]["facts"][0]["predicate"] == "invoice_language"

    rendered = _cli(["context", "--project", project_id, "--subject", "bob", "--render",
                     "which language for invoices?"], db_urls[Role.OWNER])
    assert rendered.stdout.startswith("<haki_memory>")
    empty = _cli(["context", "--project", project_id, "--subject", "nobody", "--render",
                  "anything"], db_urls[Role.OWNER])
    assert empty.returncode == 0 and empty.stdout == "\n"


def test_cli_errors_are_json_with_codes(db_urls: dict[Role, str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"facts": [{"project_id": "p", "subject_id": "s", "value": 1}]}')
    loaded = _cli(["load", str(bad)], db_urls[Role.APP])
    assert loaded.returncode == 2
    error = json.loads(loaded.stderr.strip().splitlines()[-1])["error"]
    assert error["code"] == "validation_error" and "facts[0]: field 'predicate'" in \
        error["message"]
    asked = _cli(["context", "--project", "p", "--subject", "s", "--budget", "0", "q"],
                 db_urls[Role.APP])
    assert asked.returncode == 2
    assert json.loads(asked.stderr.strip().splitlines()[-1])["error"]["code"] == \
        "budget_exceeded"


def test_cli_resolve(owner_db: Database, db_urls: dict[Role, str], embedder: Embedder,
                     project_id: str) -> None:
    a, b = str(uuid.uuid4()), str(uuid.uuid4())
    conflict_id = str(uuid.uuid4())
    MemoryWriter(owner_db, embedder).write(parse_document_text(_doc(
        project_id,
        facts=[{"id": a, "predicate": "city", "value": "Lyon"},
               {"id": b, "predicate": "city", "value": "Nantes"}],
        conflicts=[{"id": conflict_id, "fact_ids": [a, b]}])))
    wrong = _cli(["resolve", conflict_id, "--project", project_id, "--keep",
                  str(uuid.uuid4())], db_urls[Role.OWNER])
    assert wrong.returncode == 2 and "validation_error" in wrong.stderr
    done = _cli(["resolve", conflict_id, "--project", project_id, "--keep", a],
                db_urls[Role.OWNER])
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"conflict_id": conflict_id, "kept": a, "superseded": [b]}


def test_documents_are_stored_as_written_without_the_write_rules(
    owner_db: Database, embedder: Embedder, project_id: str, owner_conn: psycopg.Connection
) -> None:
    """``haki load`` shares the write API's statements, not its rules: two active values of one
    key stay two active facts with no conflict set, a repeated value is a second row, and
    statuses, versions and dates are the document's."""
    a, b, c = (str(uuid.uuid4()) for _ in range(3))
    MemoryWriter(owner_db, embedder).write(parse_document_text(_doc(project_id, facts=[
        {"id": a, "predicate": "city", "value": "Lyon", "version": 7,
         "recorded_from": "2024-01-01T00:00:00Z", "last_reinforced_at": "2024-06-01T00:00:00Z"},
        {"id": b, "predicate": "city", "value": "Nantes", "status": "disputed"},
        {"id": c, "predicate": "city", "value": "Lyon"},
    ])))
    rows = owner_conn.execute(
        "SELECT id::text, value, status, version, recorded_from::date::text, "
        "last_reinforced_at::date::text FROM facts WHERE project_id = %s ORDER BY version DESC, "
        "status", (project_id,)).fetchall()
    assert rows[0] == (a, "Lyon", "active", 7, "2024-01-01", "2024-06-01")
    assert {r[0]: (r[1], r[2], r[3]) for r in rows[1:]} == {
        b: ("Nantes", "disputed", 1), c: ("Lyon", "active", 1)}
    assert owner_conn.execute("SELECT count(*) FROM conflict_sets WHERE project_id = %s",
                              (project_id,)).fetchone() == (0,)
