"""scripts/beam_to_eval.py on two tiny hand-written chats (scripts/tests/data/beam_tiny):
messages become events with their role and a time that keeps the chat's order, evidence in
either shape is resolved, abstention questions are kept as no-answer questions, other questions
without evidence are dropped and counted, and the output is a labelled set ``haki eval`` reads."""

import json
import uuid
from pathlib import Path
from types import ModuleType

import pytest

from haki_local.evaluation import load_labelled_set
from scripts.tests.script_modules import load_script

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).resolve().parent / "data" / "beam_tiny"


@pytest.fixture(scope="module")
def converter() -> ModuleType:
    return load_script("beam_to_eval")


def _id(converter: ModuleType, subject: str, message: int) -> str:
    return str(uuid.uuid5(converter.NAMESPACE, f"{subject}/{message}"))


def _run(converter: ModuleType, tmp_path: Path, *flags: str) -> dict:
    out = tmp_path / "set.json"
    assert converter.main([str(FIXTURE), str(out), *flags]) == 0
    return json.loads(out.read_text(encoding="utf-8"))


def test_messages_become_events_with_their_role_and_ordered_times(
        converter: ModuleType, tmp_path: Path) -> None:
    events = {e["id"]: e for e in _run(converter, tmp_path)["events"]}
    assert len(events) == 8
    first = events[_id(converter, "beam-2", 0)]
    assert first["subject_id"] == "beam-2" and first["kind"] == "conversation.message"
    assert first["payload"] == {"text": "I use Postgres 16 for the billing service.",
                                "role": "user"}
    assert events[_id(converter, "beam-2", 1)]["payload"]["role"] == "assistant"
    times = [events[_id(converter, "beam-2", i)]["occurred_at"] for i in range(6)]
    assert times[:4] == ["2024-03-04T00:00:00+00:00", "2024-03-04T00:01:00+00:00",
                         "2024-03-04T00:02:00+00:00", "2024-03-04T00:03:00+00:00"]
    assert times[4:] == ["2024-03-20T00:00:00+00:00", "2024-03-20T00:01:00+00:00"]
    # A chat that names no date starts on the converter's epoch, in order.
    undated = [events[_id(converter, "beam-5", i)]["occurred_at"] for i in range(2)]
    assert undated == ["2024-01-01T00:00:00+00:00", "2024-01-01T00:01:00+00:00"]


def test_evidence_in_either_shape_and_what_is_dropped(
        converter: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    queries = {q["query"]: q for q in _run(converter, tmp_path)["queries"]}
    assert set(queries) == {"Which Postgres version does billing use?",
                            "Show me a retry loop.", "What is my cat called?",
                            "What came first, the cat or the name?",
                            "What did the kickoff agenda say?"}
    # Abstention: nothing answers it, so it is a no-answer question (no expected id).
    abstention = queries["What did the kickoff agenda say?"]
    assert abstention["category"] == "abstention"
    assert "expected_event_ids" not in abstention and "expected_fact_ids" not in abstention
    update = queries["Which Postgres version does billing use?"]
    assert update["category"] == "knowledge_update"
    assert update["expected_event_ids"] == [_id(converter, "beam-2", 0),
                                            _id(converter, "beam-2", 4)]
    # An id naming no message is dropped; a repeated id counts once.
    assert queries["Show me a retry loop."]["expected_event_ids"] == [
        _id(converter, "beam-2", 2)]
    assert queries["What is my cat called?"]["expected_event_ids"] == [
        _id(converter, "beam-5", 0)]
    # Lists of lists, flattened in the order written.
    assert queries["What came first, the cat or the name?"]["expected_event_ids"] == [
        _id(converter, "beam-5", 1), _id(converter, "beam-5", 0)]
    summary = capsys.readouterr().err
    assert ("2 chats → 8 events, 5 questions (1 without an answer; 1 dropped: no evidence)"
            in summary)
    assert "evidence ids naming no message dropped 2" in summary


def test_chats_can_be_chosen(converter: ModuleType, tmp_path: Path) -> None:
    document = _run(converter, tmp_path, "--chats", "5")
    assert {e["subject_id"] for e in document["events"]} == {"beam-5"}
    assert len(document["queries"]) == 2


def test_the_output_is_a_labelled_set(converter: ModuleType, tmp_path: Path) -> None:
    _run(converter, tmp_path)
    labelled = load_labelled_set(tmp_path / "set.json")
    assert len(labelled.document.events) == 8 and len(labelled.queries) == 5
    assert {q.category for q in labelled.queries} == {
        "knowledge_update", "instruction_following", "information_extraction",
        "event_ordering", "abstention"}
    assert [q.query for q in labelled.queries if not q.expected_event_ids] == [
        "What did the kickoff agenda say?"]
