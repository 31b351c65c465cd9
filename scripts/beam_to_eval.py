"""Converts BEAM chats (long user–assistant conversations) into a labelled set of ``haki eval``.

    .venv/bin/python scripts/beam_to_eval.py /work/shared/data/beam500k OUT.json [--chats 1,4]

BEAM ("Beyond a Million Tokens") holds one folder per chat: ``chat.json``, a list of batches
(sessions) ``{batch_number, time_anchor, turns}`` whose ``turns`` are lists of messages
``{role, id, time_anchor?, content}`` (``id`` unique within the chat; a message may end with
BEAM's own index marker `` ->-> 3,1``), and ``probing_questions/probing_questions.json``:
``{ability: [{question, source_chat_ids, ...}]}``, where ``source_chat_ids`` names the messages
that carry the evidence (a list of ids, a dict of lists, or lists of lists). The data is read
where it is; nothing of it goes into the project.

What the set holds:

- one subject per chat (project ``beam``, subject ``beam-<folder>``);
- every message as an event ``conversation.message`` with its role, the marker stripped,
  dated from the last date the chat named (a batch's or a message's ``time_anchor``,
  ``January-05-2024``) plus one minute per message since, so the chat's order is kept;
- every question with at least one evidence message, its ``category`` the ability;
- every abstention question (nothing in the chat answers it) as a no-answer question, which
  ``haki eval`` counts apart: how often such a question still receives memory, and how much.

Other questions without evidence are dropped, and so are evidence ids that name no message;
the printed summary counts both. Ids are UUID v5 of ``subject/message id``: reruns
give the same file.
"""

import argparse
import json
import re
import sys
import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from eval_sets import Counts, LabelledSet, merge, stable_id, write_set

NAMESPACE = uuid.UUID("6c2c5a9e-0d0b-4d6f-9f3e-5b8a1e7d4c21")
PROJECT = "beam"
KIND = "conversation.message"
#: The ability whose questions nothing in the chat answers.
ABSTENTION = "abstention"
#: Where a chat's clock starts when no date was named yet.
EPOCH = datetime(2024, 1, 1, tzinfo=UTC)

_MARKER = re.compile(r"\s*->->\s*[\d,\s]+$")


def parse_anchor(text: str | None) -> datetime | None:
    """``"January-05-2024"`` → midnight UTC of that day; None for no date."""
    if not text:
        return None
    return datetime.strptime(text.strip(), "%B-%d-%Y").replace(tzinfo=UTC)


def message_text(content: str) -> str:
    """The message as remembered: BEAM's trailing index marker removed."""
    return _MARKER.sub("", content).strip()


def evidence_ids(source: Any) -> list[int]:
    """The message ids of ``source_chat_ids``: an id, or lists and dicts of them nested in any
    way, or nothing; each once, in the order written."""
    if source is None:
        return []
    if isinstance(source, dict):
        source = list(source.values())
    if isinstance(source, list):
        return list(dict.fromkeys(i for item in source for i in evidence_ids(item)))
    return [int(source)]


def _messages(batches: Sequence[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], datetime]]:
    """Every message in chat order with its time: the last date named, plus a minute a message
    since it was named."""
    anchor, step = EPOCH, 0
    for batch in batches:
        named = parse_anchor(batch.get("time_anchor"))
        if named is not None:
            anchor, step = named, 0
        for turn in batch.get("turns") or []:
            for message in turn:
                named = parse_anchor(message.get("time_anchor"))
                if named is not None:
                    anchor, step = named, 0
                yield message, anchor + timedelta(minutes=step)
                step += 1


#: Where each ability keeps its reference answer.
ANSWER_FIELDS = ("answer", "ideal_answer", "ideal_summary", "expected_compliance")


def _answer(item: dict[str, Any]) -> dict[str, str]:
    """The question's reference answer as the ``answer`` field, when it has one."""
    for name in ANSWER_FIELDS:
        if item.get(name):
            return {"answer": str(item[name])}
    return {}


def _uuid(subject: str, message_id: int) -> str:
    return stable_id(NAMESPACE, subject, str(message_id))


def convert_chat(folder: Path, counts: Counts) -> LabelledSet:
    """One chat folder as the events and queries of its subject."""
    subject = f"beam-{folder.name}"
    batches = json.loads((folder / "chat.json").read_text(encoding="utf-8"))
    events = []
    for message, at in _messages(batches):
        events.append({
            "id": _uuid(subject, int(message["id"])),
            "project_id": PROJECT,
            "subject_id": subject,
            "kind": KIND,
            "payload": {"text": message_text(message["content"]), "role": message["role"]},
            "occurred_at": at.isoformat(),
        })
    known = {event["id"] for event in events}
    questions = json.loads((folder / "probing_questions" / "probing_questions.json").read_text(
        encoding="utf-8"))
    queries = []
    for ability, items in sorted(questions.items()):
        for item in items:
            expected = []
            for message_id in evidence_ids(item.get("source_chat_ids")):
                event_id = _uuid(subject, message_id)
                if event_id in known:
                    expected.append(event_id)
                else:
                    counts.unknown_ids += 1
            if not expected and ability != ABSTENTION:
                counts.questions_dropped += 1
                continue
            queries.append({"project_id": PROJECT, "subject_id": subject,
                            "query": item["question"], "category": ability,
                            **_answer(item),
                            **({"expected_event_ids": expected} if expected else {})})
    chat: LabelledSet = {"events": events, "queries": queries}
    counts.add(chat)
    return chat


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, help="folder of BEAM chat folders")
    parser.add_argument("out", type=Path, help="labelled set to write (JSON)")
    parser.add_argument("--chats", default=None,
                        help="comma-separated chat folders to convert (default: all)")
    args = parser.parse_args(argv)
    folders = sorted((p for p in args.data.iterdir() if (p / "chat.json").is_file()),
                     key=lambda p: (len(p.name), p.name))
    if args.chats:
        wanted = set(args.chats.split(","))
        folders = [p for p in folders if p.name in wanted]
    if not folders:
        parser.error(f"no chat folder (with chat.json) in {args.data}")
    counts = Counts()
    write_set(args.out, merge(convert_chat(folder, counts) for folder in folders))
    print(f"{counts.chats} chats → {counts.events} events, {counts.questions} questions "
          f"({counts.no_answer} without an answer; {counts.questions_dropped} dropped: no "
          f"evidence), evidence ids naming no message dropped {counts.unknown_ids}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
