"""``haki load``, the demo and ``haki resolve`` go through the write API's core (issue 16,
item 9): the same statements, the same embedding, the same resolution — checked without a
database by recording what each entry point calls."""

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

import haki.memory.conflicts as conflicts
import haki.memory.events as events
import haki.memory.facts as facts
import haki.memory.store as store
import haki.memory.writer as writer
import haki_local.demo as demo
from haki.memory import MemoryWriter
from haki_local.cli import memory as cli


def test_the_writer_uses_the_routes_statements_and_embedding() -> None:
    assert writer.UPSERT_EVENT is events.UPSERT_EVENT
    assert writer.event_row is events.event_row
    assert writer.UPSERT_FACT is facts.UPSERT_FACT
    assert writer.fact_row is facts.fact_row
    assert writer.INSERT_CONFLICT is conflicts.INSERT_CONFLICT
    assert writer.resolve_conflict is conflicts.resolve_conflict
    assert writer.embed_texts is store.embed_texts is events.embed_texts is facts.embed_texts
    assert writer.write_transaction is store.write_transaction


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    calls: list[Any] = []

    def write(self: MemoryWriter, document: Any, progress: Any = None) -> Any:
        calls.append(document)
        return writer.LoadSummary(len(document.facts), len(document.events), 0, 0)

    monkeypatch.setattr(MemoryWriter, "write", write)
    return calls


def test_the_demo_is_loaded_by_the_core_writer(
    recorded: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(demo, "is_loaded", lambda db, document: False)
    summary = demo.load_demo(db=None, embedder=None)  # type: ignore[arg-type]
    (document,) = recorded
    assert summary is not None and summary.facts == len(demo.demo_document().facts)
    assert {f.id for f in document.facts} == {f.id for f in demo.demo_document().facts}


@pytest.fixture(autouse=True)
def no_database(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's handles are lazy and nothing here opens one: never start the embedded
    server for a unit test."""
    monkeypatch.setattr(cli, "database_url", lambda settings, role: "postgresql://nobody@/none")


def test_haki_load_is_the_core_writer(
    recorded: list[Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "memory.json"
    path.write_text(json.dumps({"facts": [
        {"project_id": "p", "subject_id": "s", "predicate": "city", "value": "Lyon"}]}))
    assert cli._load(argparse.Namespace(file=path)) == 0
    (document,) = recorded
    assert [f.value for f in document.facts] == ["Lyon"]
    assert json.loads(capsys.readouterr().out)["facts"] == 1


def test_haki_resolve_is_the_routes_core(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import uuid
    from datetime import UTC, datetime

    from haki.memory.api import ResolveResponse

    assert cli.resolve is conflicts.resolve  # the route's own function
    seen: list[Any] = []
    conflict, keep, other = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()

    def resolve(db: Any, project_id: str, conflict_id: Any, request: Any) -> ResolveResponse:
        seen.append((project_id, conflict_id, request))
        return ResolveResponse(conflict_id=conflict_id, kept_fact_id=request.keep_fact_id,
                               superseded_fact_ids=[other], resolved_at=datetime.now(UTC))

    monkeypatch.setattr(cli, "resolve", resolve)
    cli._resolve(argparse.Namespace(project="p", conflict_id=conflict, keep=keep))
    ((project, conflict_id, request),) = seen
    assert (project, conflict_id, request.project_id, request.keep_fact_id) == (
        "p", conflict, "p", keep)
    assert json.loads(capsys.readouterr().out) == {
        "conflict_id": str(conflict), "kept": str(keep), "superseded": [str(other)]}
