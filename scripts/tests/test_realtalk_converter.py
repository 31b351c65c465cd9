"""scripts/realtalk_to_eval.py on a tiny hand-written chat (scripts/tests/data/realtalk_tiny): turns
become messages as the API stores them, at their own time; loose evidence is resolved or
dropped and counted, and the output is a labelled set ``haki eval`` reads."""

import json
import uuid
from pathlib import Path
from types import ModuleType

import pytest

from haki_local.evaluation import load_labelled_set
from scripts.tests.script_modules import load_script

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).resolve().parent / "data" / "realtalk_tiny"
SUBJECT = "chat-1-ana-ben"


@pytest.fixture(scope="module")
def converter() -> ModuleType:
    return load_script("realtalk_to_eval")


def _event_id(converter: ModuleType, dia_id: str) -> str:
    return str(uuid.uuid5(converter.NAMESPACE, f"{SUBJECT}/{dia_id}"))


def _run(converter: ModuleType, tmp_path: Path, *flags: str) -> dict:
    out = tmp_path / "set.json"
    assert converter.main([str(FIXTURE), str(out), *flags]) == 0
    return json.loads(out.read_text(encoding="utf-8"))


def test_turns_become_events_at_their_own_time(converter: ModuleType, tmp_path: Path) -> None:
    labelled = _run(converter, tmp_path)
    turns = ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2", "D2:3"]
    events = {dia_id: event for dia_id, event in zip(turns, labelled["events"], strict=True)}
    assert [e["id"] for e in events.values()] == [_event_id(converter, d) for d in turns]
    assert {e["subject_id"] for e in events.values()} == {SUBJECT}
    assert events["D1:1"]["occurred_at"] == "2023-12-29T22:42:04+00:00"
    # A turn without its own time takes the time of its chat session.
    assert events["D2:3"]["occurred_at"] == "2024-01-02T09:59:00+00:00"
    # Stored as the API stores a message: both speakers are people, named.
    assert events["D1:2"]["payload"] == {"role": "user", "name": "Ben",
                                         "text": "Nice! I went skiing in Utah."}
    assert events["D1:3"]["payload"] == {
        "role": "user", "name": "Ana",
        "text": "Look at my first bowl [shares a photo: a blue ceramic bowl on a table]"}
    assert labelled["facts"] == []


def test_evidence_is_resolved_expanded_or_dropped(converter: ModuleType, tmp_path: Path) -> None:
    queries = {q["query"]: q for q in _run(converter, tmp_path)["queries"]}

    def expected(question: str) -> list[str]:
        return queries[question]["expected_event_ids"]

    ids = {d: _event_id(converter, d) for d in ("D1:1", "D1:2", "D1:3", "D2:1", "D2:3")}
    # A trailing dot is tolerated.
    assert expected("What hobby did Ana start?") == [ids["D1:1"], ids["D1:3"]]
    # A range across sessions is expanded in dialogue order; "D 2:3" is read as D2:3.
    assert expected("When did the bowl come out of the kiln?") == [
        ids["D1:3"], ids["D2:1"], ids["D2:3"]]
    # A duplicate is kept once, an id naming no turn is dropped.
    assert expected("Does Ben like winter sports?") == [ids["D1:2"]]
    # No resolvable evidence: the question is dropped (it is not a negative question).
    assert "Where is Ana from?" not in queries
    assert queries["What hobby did Ana start?"]["category"] == "multi-hop"
    assert queries["When did the bowl come out of the kiln?"]["category"] == "temporal"
    assert queries["Does Ben like winter sports?"]["category"] == "open-domain"
    assert queries["What will Ana make next?"]["category"] == "category-5"


def test_summary_counts_what_was_dropped(converter: ModuleType) -> None:
    _, counts = converter.convert(sorted(FIXTURE.glob("*.json")), summary_facts=False)
    assert (counts.chats, counts.events, counts.questions) == (1, 6, 4)
    assert counts.questions_dropped == 1
    assert counts.ranges_expanded == 1
    assert counts.unknown_ids == 2  # D1:9, D7:1
    assert sorted(counts.unparseable) == ["", "D:5"]


def test_summaries_become_facts_only_when_asked(converter: ModuleType, tmp_path: Path) -> None:
    facts = _run(converter, tmp_path, "--summary-facts")["facts"]
    assert [f["value"] for f in facts] == ["Ana starts pottery classes.",
                                           "Ben goes skiing in Utah."]
    assert {f["predicate"] for f in facts} == {"session_event"}
    assert {f["valid_from"] for f in facts} == {"2023-12-29T22:42:04+00:00"}
    assert all("source_event_ids" not in f for f in facts)  # they cite no turn


def test_output_is_a_labelled_set_haki_eval_reads(converter: ModuleType, tmp_path: Path) -> None:
    _run(converter, tmp_path, "--summary-facts")
    labelled = load_labelled_set(tmp_path / "set.json")
    assert (len(labelled.document.facts), len(labelled.document.events)) == (2, 6)
    assert [q.category for q in labelled.queries] == [
        "multi-hop", "temporal", "open-domain", "category-5"]
