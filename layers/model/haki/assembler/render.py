"""The prompt-ready block SDKs inject before the LLM call."""

from haki.models import ContextPacket
from haki.text import fact_text


def render_packet(packet: ContextPacket) -> str:
    """``<haki_memory>…</haki_memory>``; an empty packet renders as an empty string (an
    "I remember nothing" block would itself distract the model)."""
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
            lines.append(f"- {fact_text(fact.predicate, fact.value)}{suffix}")
    if packet.episodes:
        lines.append("Episodes:")
        for episode in packet.episodes:
            lines.append(f"- [{episode.occurred_at.isoformat()}] {episode.excerpt}")
    lines.append("</haki_memory>")
    return "\n".join(lines)
