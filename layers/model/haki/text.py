"""How memory turns into text: for embedding, for token estimates and for the prompt block.

One definition serves all three, so a fact is embedded as the same words the model later reads
and is charged for exactly those words against the budget.
"""

import json
from typing import Any, Literal, get_args

#: Who said a message (``POST /v1/events`` ``messages``): stored as the payload's ``role``.
MessageRole = Literal["user", "assistant", "system", "tool"]
MESSAGE_ROLES: frozenset[str] = frozenset(get_args(MessageRole))
#: The payload keys that name a message's speaker.
_SPEAKER_KEYS = ("role", "name")


def estimate_tokens(text: str) -> int:
    """The budget's token estimate (docs/spec.md §4): ``max(1, len(text) // 4)``."""
    return tokens_of_length(len(text))


def tokens_of_length(chars: int) -> int:
    """:func:`estimate_tokens` of a text of ``chars`` characters."""
    return max(1, chars // 4)


def value_text(value: Any) -> str:
    """A fact value as text: :func:`readable`, as an episode's payload (an object as
    ``key: value; …``)."""
    return readable(value)


def fact_text(predicate: str, value: Any) -> str:
    """``preferred_language`` + ``"fr"`` → ``preferred language: fr``."""
    return f"{predicate.replace('_', ' ')}: {value_text(value)}"


def readable(value: Any) -> str:
    """A JSON value as compact text for a reader, not a parser: an object as ``key: value``
    pairs (sorted by key) joined by ``; ``, an array as its items joined by ``, ``, a nested
    object or array in parentheses, strings without quotes, other scalars as JSON spells them.
    ``{"status": "open", "tags": ["billing", "may"]}`` → ``status: open; tags: billing, may``."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "; ".join(f"{key}: {_nested(inner)}" for key, inner in sorted(value.items()))
    if isinstance(value, list):
        return ", ".join(_nested(inner) for inner in value)
    return json.dumps(value)


def _nested(value: Any) -> str:
    text = readable(value)
    return f"({text})" if isinstance(value, dict | list) else text


def speaker(payload: dict[str, Any]) -> tuple[str | None, str | None]:
    """A message's ``(role, name)``; ``(None, None)`` for a payload that is not a message (no
    ``role`` among :data:`MESSAGE_ROLES`: a record's own ``role`` field is data). The name is
    kept only when it is a string."""
    role = payload.get("role")
    if not isinstance(role, str) or role not in MESSAGE_ROLES:
        return None, None
    name = payload.get("name")
    return role, name if isinstance(name, str) else None


def event_body(payload: dict[str, Any]) -> str:
    """An episode's payload as text: its ``text`` if it has one, else the payload made
    :func:`readable` (without a message's speaker, which is shown apart)."""
    body = payload.get("text")
    if isinstance(body, str):
        return body
    if speaker(payload)[0] is not None:
        payload = {key: value for key, value in payload.items() if key not in _SPEAKER_KEYS}
    return readable(payload)


def event_text(kind: str, payload: dict[str, Any]) -> str:
    """An episode as text (what is embedded): its kind, a message's speaker by name (questions
    name people: "What did Ana say about …?"), then its body. The search vector holds the same
    name (``events.search_vector``)."""
    name = speaker(payload)[1]
    said_by = f"{name}: " if name else ""
    return f"{kind}: {said_by}{event_body(payload)}"
