"""The prompt-ready ``<haki_memory>`` block: what ``POST /v1/context`` returns as ``block``
when asked (``render: true``), what ``haki context --render`` prints and what the console
shows. The SDKs take this string from the service; there is no other renderer.

Memory is tenant data, and some of it was written by whoever talked to the agent: it must not
be able to close the block, open a forged one, or add lines that look like the block's own.
Every memory text is put on one line (line breaks of any kind become spaces, other control
characters and invisible format characters are dropped) and its angle brackets, and every
character that normalises or looks like one, become ‹ › , so no tag can be formed from memory,
whatever its case, spacing or Unicode normalisation.

Each episode says when it happened, in UTC to the minute (``2025-06-28 09:14Z``), and, for a
message, who said it: its role and, when given, the speaker's name (``user (Ana):``). A
speaker's name is memory too and is made safe like any other text.
"""

import re
from datetime import UTC, datetime

from haki.models import ContextPacket, PacketEpisode
from haki.text import fact_text

#: Line breaks of every kind (\n, \r, VT, FF, NEL, LS, PS) and the other control characters
#: (C0 but the tab, DEL, C1).
_BREAKS = re.compile(r"[\n\r\x0b\x0c\x85\u2028\u2029]+")
_CONTROLS = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f]")
#: Unicode's format characters (category Cf, as of Unicode 15): invisible, they can hide text
#: or reorder its display (soft hyphen, Arabic number signs, zero-width spaces and joiners,
#: bidirectional embeddings, overrides and isolates, invisible operators, the byte-order mark,
#: interlinear annotations, Egyptian hieroglyph controls, shorthand format controls, musical
#: beams, the tag characters U+E0000–U+E007F). Dropped from memory text.
_FORMAT = re.compile(
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f"
    "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
    "\U000e0020-\U000e007f]")
#: Angle brackets and their look-alikes become ‹ ›: every character that Unicode's
#: compatibility normalisation (NFKC/NFKD) turns into ``<`` or ``>`` (fullwidth ＜＞, small form
#: ﹤﹥, the negated ≮≯) and the arrowheads drawn like them (˂˃ ❮❯), so no normalisation of the
#: block, by the model's tokenizer or anyone, can turn memory into a tag.
_ANGLES = str.maketrans(dict.fromkeys("<＜﹤≮˂❮", "‹") | dict.fromkeys(">＞﹥≯˃❯", "›"))


def inline(text: str) -> str:
    """Memory text made safe inside the block: one line, no control or format character, no
    tag character nor look-alike of one."""
    return _FORMAT.sub("", _CONTROLS.sub("", _BREAKS.sub(" ", text))).translate(_ANGLES)


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
            lines.append(f"- {inline(fact_text(fact.predicate, fact.value))}{suffix}")
    if packet.episodes:
        lines.append("Episodes:")
        for episode in packet.episodes:
            lines.append(f"- [{minute(episode.occurred_at)}] {said(episode)}")
    lines.append("</haki_memory>")
    return "\n".join(lines)


def minute(moment: datetime) -> str:
    """``2025-06-28 09:14Z``: the moment in UTC, to the minute."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%MZ")


def said(episode: PacketEpisode) -> str:
    """``user (Ana): text`` for a message, the text alone for any other episode."""
    if episode.role is None:
        return inline(episode.excerpt)
    who = f"{episode.role} ({episode.name})" if episode.name else episode.role
    return f"{inline(who)}: {inline(episode.excerpt)}"
