"""The prompt-ready ``<haki_memory>`` block, exactly as the service renders it.

This is a copy of ``haki_local.render.render_packet`` and of the text helpers it uses
(``haki.text``), so the client needs nothing of the service installed; a test renders hostile
packets with both and requires the same string.

Memory is tenant data, and some of it was written by whoever talked to the agent: it must not
be able to close the block, open a forged one, or add lines that look like the block's own.
Every memory text is put on one line (line breaks of any kind become spaces, other control
characters are dropped) and its angle brackets become the look-alikes ‹ ›.
"""

import json
import re
from typing import Any

from haki_client.models import ContextPacket, ContextResponse

#: Line breaks of every kind (\n, \r, VT, FF, NEL, LS, PS) and the other control characters.
_BREAKS = re.compile(r"[\n\r\x0b\x0c\x85\u2028\u2029]+")
_CONTROLS = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
_ANGLES = str.maketrans({"<": "‹", ">": "›"})


def inline(text: str) -> str:
    """Memory text made safe inside the block: one line, no tag characters."""
    return _CONTROLS.sub("", _BREAKS.sub(" ", text)).translate(_ANGLES)


def value_text(value: Any) -> str:
    """A fact value as text: strings as they are, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), sort_keys=True)


def fact_text(predicate: str, value: Any) -> str:
    """``preferred_language`` + ``"fr"`` → ``preferred language: fr``."""
    return f"{predicate.replace('_', ' ')}: {value_text(value)}"


def render(packet: ContextPacket | ContextResponse) -> str:
    """``<haki_memory>…</haki_memory>``, ready to put before the LLM call; an empty packet
    (including the fail-open one) renders as an empty string."""
    if isinstance(packet, ContextResponse):
        packet = packet.packet
    if not packet.facts and not packet.episodes:
        return ""
    lines = ["<haki_memory>"]
    if packet.facts:
        lines.append("Facts:")
        for fact in packet.facts:
            notes = []
            if fact.valid_from is not None:
                notes.append(f"since {fact.valid_from.date().isoformat()}")
            if fact.confidence is not None:
                notes.append(f"confidence {fact.confidence:.2f}")
            if fact.unconfirmed:
                notes.append("unconfirmed")
            suffix = f" ({', '.join(notes)})" if notes else ""
            lines.append(f"- {inline(fact_text(fact.predicate, fact.value))}{suffix}")
    if packet.episodes:
        lines.append("Episodes:")
        for episode in packet.episodes:
            lines.append(f"- [{episode.occurred_at.isoformat()}] {inline(episode.excerpt)}")
    lines.append("</haki_memory>")
    return "\n".join(lines)
