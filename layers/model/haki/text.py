"""How memory turns into text: for embedding, for token estimates and for the prompt block.

One definition serves all three, so a fact is embedded as the same words the model later reads
and is charged for exactly those words against the budget.
"""

import json
from typing import Any


def estimate_tokens(text: str) -> int:
    """The budget's token estimate (docs/spec.md §4): ``max(1, len(text) // 4)``."""
    return max(1, len(text) // 4)


def value_text(value: Any) -> str:
    """A fact value as text: strings as they are, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), sort_keys=True)


def fact_text(predicate: str, value: Any) -> str:
    """``preferred_language`` + ``"fr"`` → ``preferred language: fr``."""
    return f"{predicate.replace('_', ' ')}: {value_text(value)}"


def event_body(payload: dict[str, Any]) -> str:
    """An episode's payload as text: its ``text`` if it has one, else the whole payload."""
    body = payload.get("text")
    return body if isinstance(body, str) else value_text(payload)


def event_text(kind: str, payload: dict[str, Any]) -> str:
    """An episode as text (what is embedded): its kind, then its body."""
    return f"{kind}: {event_body(payload)}"
