"""What the converters of public benchmarks into ``haki eval`` labelled sets share: the tally
of what a conversion kept and dropped, stable ids, and the set as one JSON document."""

import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: A labelled set: its ``facts``, ``events`` and ``queries``.
LabelledSet = dict[str, list[dict[str, Any]]]


@dataclass
class Counts:
    """What the conversion kept and dropped (the printed summary)."""

    chats: int = 0
    events: int = 0
    facts: int = 0
    questions: int = 0
    #: Questions kept without expected ids: nothing in memory answers them.
    no_answer: int = 0
    questions_dropped: int = 0
    unknown_ids: int = 0

    def add(self, chat: LabelledSet) -> None:
        """Count one converted chat."""
        self.chats += 1
        self.events += len(chat.get("events", []))
        self.facts += len(chat.get("facts", []))
        self.questions += len(chat.get("queries", []))
        self.no_answer += sum(1 for query in chat.get("queries", [])
                              if not query.get("expected_event_ids")
                              and not query.get("expected_fact_ids"))


def stable_id(namespace: uuid.UUID, *parts: str) -> str:
    """UUID v5 of ``parts`` joined by ``/``: reruns give the same ids."""
    return str(uuid.uuid5(namespace, "/".join(parts)))


def merge(chats: Iterable[LabelledSet]) -> LabelledSet:
    """The chats' facts, events and queries as one set, in chat order."""
    document: LabelledSet = {"facts": [], "events": [], "queries": []}
    for chat in chats:
        for section, items in chat.items():
            document[section].extend(items)
    return document


def write_set(path: Path, document: LabelledSet) -> None:
    path.write_text(json.dumps(document, ensure_ascii=False, indent=1), encoding="utf-8")
