"""Converts REALTALK chats into a labelled set of ``haki eval``.

    .venv/bin/python scripts/realtalk_to_eval.py /work/shared/data/realtalk OUT.json
    .venv/bin/python scripts/realtalk_to_eval.py DATA OUT.json --summary-facts

REALTALK (arXiv 2502.13270) holds real human–human chats in the LoCoMo layout: one JSON file
per chat with ``session_N`` lists of turns (``dia_id`` like ``D3:7``, ``speaker``,
``clean_text``, ``date_time`` "29.12.2023, 22:42:04", optional ``blip_caption`` of a shared
photo), per-session ``events_session_N`` summaries, and ``qa`` items whose ``evidence`` names
the turns that answer them. The data is read where it is; nothing of it goes into the project.

What the set holds:

- one subject per chat (project ``realtalk``, subject from the file name);
- every turn as an event ``conversation.message`` at its own timestamp, stored as
  ``POST /v1/events`` stores a message: ``{"role": "user", "name": <speaker>, "text"}`` (both
  speakers are people), the text followed by the caption of a shared photo, if any;
- with ``--summary-facts``, every per-speaker session summary ("Kate takes a cooking class")
  as a fact ``session_event`` valid from the date of its conversation. The summaries cite no
  turn, so they can never cover an evidence label: they measure whether summaries crowd the
  turns out;
- every question with at least one resolvable evidence turn, its ``category`` named after
  LoCoMo's numbering (1 multi-hop, 2 temporal, 3 open-domain).

Evidence is written loosely in the data: ``;``/``,``/``.``-separated lists, ranges
``D12:3-D12:5`` (expanded in dialogue order), stray spaces or dots, and ids of turns removed in
cleaning. Ranges are expanded, ids that name no turn are dropped, text that holds no id at all
is dropped, and questions left without evidence are dropped; the printed summary counts each.
Ids are UUID v5 of ``chat/dia_id`` (or ``chat/summary/...``): reruns give the same file.
"""

import argparse
import json
import re
import sys
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import eval_sets

NAMESPACE = uuid.UUID("0f4f1a6e-52a5-4b8e-9a40-8f3f0d2b6c71")
PROJECT = "realtalk"
KIND = "conversation.message"
SUMMARY_PREDICATE = "session_event"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain"}

_SESSION_KEY = re.compile(r"session_(\d+)")
#: One evidence id or range: ``D3:7``, ``D 2:18``, ``D12:3-D12:5`` (spaces tolerated).
_EVIDENCE = re.compile(r"D\s*(\d+)\s*:\s*(\d+)(?:\s*-\s*D\s*(\d+)\s*:\s*(\d+))?")


@dataclass
class Counts(eval_sets.Counts):
    """What the conversion kept and dropped, with what became of the evidence strings."""

    evidence_strings: int = 0
    ranges_expanded: int = 0
    unparseable: list[str] = field(default_factory=list)


def parse_time(text: str) -> str:
    """``"29.12.2023, 22:42:04"`` → ISO 8601 in UTC (the data carries no time zone)."""
    return datetime.strptime(text.strip(), "%d.%m.%Y, %H:%M:%S").replace(
        tzinfo=UTC).isoformat()


def subject_of(path: Path) -> str:
    """``Chat_1_Emi_Elise.json`` → ``chat-1-emi-elise``."""
    return path.stem.lower().replace("_", "-")


def _uuid(*parts: str) -> str:
    return eval_sets.stable_id(NAMESPACE, *parts)


def _sessions(raw: dict[str, Any]) -> list[int]:
    return sorted(int(m.group(1)) for key in raw if (m := _SESSION_KEY.fullmatch(key)))


def turn_payload(turn: dict[str, Any]) -> dict[str, str]:
    """A turn as the API stores a message: a person's (``user``) named turn."""
    return {"role": "user", "name": turn["speaker"], "text": turn_text(turn)}


def turn_text(turn: dict[str, Any]) -> str:
    """The text of a turn, then the shared photo's caption."""
    text = turn["clean_text"].strip()
    caption = turn.get("blip_caption")
    return f"{text} [shares a photo: {caption}]" if caption else text


def resolve_evidence(evidence: Sequence[str], order: Sequence[str], counts: Counts) -> list[str]:
    """The turn ids named by ``evidence`` (``order``: every turn id in dialogue order), each
    once, in the order written. Unknown ids and text holding no id are counted, not kept."""
    position = {dia_id: i for i, dia_id in enumerate(order)}
    resolved: list[str] = []
    for text in evidence:
        counts.evidence_strings += 1
        matches = list(_EVIDENCE.finditer(text))
        if not matches:
            counts.unparseable.append(text)
            continue
        for m in matches:
            start = f"D{m.group(1)}:{m.group(2)}"
            if m.group(3) is None:
                ids = [start]
            else:
                end = f"D{m.group(3)}:{m.group(4)}"
                counts.ranges_expanded += 1
                if start in position and end in position and position[start] <= position[end]:
                    ids = list(order[position[start]:position[end] + 1])
                else:
                    ids = [start, end]
            for dia_id in ids:
                if dia_id not in position:
                    counts.unknown_ids += 1
                elif dia_id not in resolved:
                    resolved.append(dia_id)
    return resolved


def convert_chat(raw: dict[str, Any], subject: str, counts: Counts, *,
                 summary_facts: bool) -> eval_sets.LabelledSet:
    """One chat as facts, events and queries of ``subject``."""
    events: list[dict[str, Any]] = []
    order: list[str] = []
    for n in _sessions(raw):
        session_time = raw.get(f"session_{n}_date_time")
        for turn in raw[f"session_{n}"]:
            stamp = turn.get("date_time") or session_time
            events.append({
                "id": _uuid(subject, turn["dia_id"]),
                "project_id": PROJECT,
                "subject_id": subject,
                "kind": KIND,
                "payload": turn_payload(turn),
                "occurred_at": parse_time(stamp) if stamp else None,
            })
            order.append(turn["dia_id"])
    facts: list[dict[str, Any]] = []
    if summary_facts:
        for n in _sessions(raw):
            session_time = raw.get(f"session_{n}_date_time")
            for agent, items in sorted((raw.get(f"events_session_{n}") or {}).items()):
                for index, item in enumerate(items):
                    text = (item.get("sub-event") or "").strip()
                    if not text:
                        continue
                    facts.append({
                        "id": _uuid(subject, "summary", str(n), agent, str(index)),
                        "project_id": PROJECT,
                        "subject_id": subject,
                        "predicate": SUMMARY_PREDICATE,
                        "value": text,
                        "qualifiers": {"session": n},
                        "valid_from": parse_time(session_time) if session_time else None,
                    })
    queries: list[dict[str, Any]] = []
    for qa in raw.get("qa", []):
        turns = resolve_evidence(qa.get("evidence") or [], order, counts)
        if not turns:
            counts.questions_dropped += 1
            continue
        category = qa.get("category")
        queries.append({
            "project_id": PROJECT,
            "subject_id": subject,
            "query": qa["question"],
            **({"answer": str(qa["answer"])} if qa.get("answer") else {}),
            "category": CATEGORIES.get(category, f"category-{category}"),
            "expected_event_ids": [_uuid(subject, dia_id) for dia_id in turns],
        })
    chat: eval_sets.LabelledSet = {"facts": facts, "events": events, "queries": queries}
    counts.add(chat)
    return chat


def convert(paths: Sequence[Path], *, summary_facts: bool) -> tuple[dict[str, Any], Counts]:
    """Every chat file of ``paths`` into one labelled set."""
    counts = Counts()
    document = eval_sets.merge(
        convert_chat(json.loads(path.read_text(encoding="utf-8")), subject_of(path), counts,
                     summary_facts=summary_facts)
        for path in paths)
    return document, counts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path, help="folder of REALTALK Chat_*.json files")
    parser.add_argument("out", type=Path, help="labelled set to write (JSON)")
    parser.add_argument("--summary-facts", action="store_true",
                        help="also store the per-session summaries as facts")
    args = parser.parse_args(argv)
    paths = sorted(args.data.glob("*.json"))
    if not paths:
        parser.error(f"no *.json file in {args.data}")
    document, counts = convert(paths, summary_facts=args.summary_facts)
    eval_sets.write_set(args.out, document)
    print(f"{counts.chats} chats → {counts.events} events, {counts.facts} facts, "
          f"{counts.questions} questions ({counts.questions_dropped} dropped: no resolvable "
          f"evidence)\nevidence strings {counts.evidence_strings}: ranges expanded "
          f"{counts.ranges_expanded}, ids naming no turn dropped {counts.unknown_ids}, "
          f"strings holding no id dropped {len(counts.unparseable)} "
          f"{sorted(set(counts.unparseable))}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
