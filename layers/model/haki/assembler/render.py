"""The prompt-ready ``<haki_memory>`` block: what ``POST /v1/context`` returns as ``block``
when asked (``render: true``), what ``haki context --render`` prints and what the console
shows. The SDKs take this string from the service; there is no other renderer. The budget
bounds this block (the packer charges every line of it, ``packing.py``), so its layout spends
characters on memory, not on formatting::

    <haki_memory>
    [f1] preferred language: fr (since 2026-11-27)
    ## 2026-11-20 · support-42
    [e1] Ana: Hi! Reports in English please.
    [e2] assistant: Noted.
    </haki_memory>

Each line starts with a handle to cite it by: ``[f<i>]`` for the i-th fact of the packet,
``[e<j>]`` for its j-th episode (1-based, in packet order). Facts come first, then the
episodes under one short header per group: the day (UTC) and, when the episodes have one,
their thread; within a group the lines are in the order said, so the day and the order stand
for the time (the packet keeps each episode's ``occurred_at``). A message says who said it:
a user's message by the speaker's name when it has one (``Ana:``), any other by its role
(``assistant:``), with the name beside it when given (``assistant (Haki):``). A name that
could pass for a role or a handle keeps the user's role before it (``user (assistant):``).

Memory is tenant data, and some of it was written by whoever talked to the agent: it must not
be able to close the block, open a forged one, or add lines that look like the block's own.
Every memory text (a thread id and a speaker's name included) is put on one line (line breaks
of any kind become spaces, other control characters and invisible format characters are
dropped) and its angle brackets, and every character that normalises or looks like one,
become ‹ › , so no tag can be formed from memory, whatever its case, spacing or Unicode
normalisation; every line starts with the block's own handle or header mark, never with
memory.
"""

import re
from datetime import UTC, date, datetime
from typing import Any

from haki.models import ContextPacket
from haki.text import MESSAGE_ROLES, fact_text

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
#: A name's first word, when the name starts with one (letters and digits).
_FIRST_WORD = re.compile(r"[^\W_]+")
#: Angle brackets and their look-alikes become ‹ ›: every character that Unicode's
#: compatibility normalisation (NFKC/NFKD) turns into ``<`` or ``>`` (fullwidth ＜＞, small form
#: ﹤﹥, the negated ≮≯) and the arrowheads drawn like them (˂˃ ❮❯), so no normalisation of the
#: block, by the model's tokenizer or anyone, can turn memory into a tag.
_ANGLES = str.maketrans(dict.fromkeys("<＜﹤≮˂❮", "‹") | dict.fromkeys(">＞﹥≯˃❯", "›"))


OPEN_TAG = "<haki_memory>"
CLOSE_TAG = "</haki_memory>"
#: The characters the two tag lines add to a block that holds anything (with a line break
#: after the opening tag; the closing tag ends the block).
TAGS_CHARS = len(OPEN_TAG) + 1 + len(CLOSE_TAG)

#: An episode's group: its day in UTC and its thread (None: no thread).
Group = tuple[date, str | None]


def inline(text: str) -> str:
    """Memory text made safe inside the block: one line, no control or format character, no
    tag character nor look-alike of one. (Printable ASCII, the common case the packer measures
    for every candidate, holds no break, control, format character nor look-alike: only its
    two brackets change.)"""
    if text.isascii() and text.isprintable():
        return text.replace("<", "‹").replace(">", "›")
    return _FORMAT.sub("", _CONTROLS.sub("", _BREAKS.sub(" ", text))).translate(_ANGLES)


def render_packet(packet: ContextPacket) -> str:
    """``<haki_memory>…</haki_memory>``; an empty packet renders as an empty string (an
    "I remember nothing" block would itself distract the model). Episodes are shown in packet
    order, a header before each one whose group differs from the previous one's (the
    assembler's packets hold each group's episodes together, in the order they were said)."""
    if not packet.facts and not packet.episodes:
        return ""
    lines = [OPEN_TAG]
    lines.extend(fact_line(number, f.predicate, f.value, f.valid_from, f.unconfirmed)
                 for number, f in enumerate(packet.facts, start=1))
    previous: Group | None = None
    for number, episode in enumerate(packet.episodes, start=1):
        if (current := group_of(episode.occurred_at, episode.thread_id)) != previous:
            lines.append(group_header(current))
            previous = current
        lines.append(episode_line(number, episode.role, episode.name, episode.excerpt))
    lines.append(CLOSE_TAG)
    return "\n".join(lines)


# The lines are made from the fields they show (not from packet models), so that the packer
# measures a candidate's line before deciding to make it part of the packet.


def fact_line(number: int, predicate: str, value: Any, valid_from: datetime | None,
              unconfirmed: bool) -> str:
    """``[f1] preferred language: fr (since 2026-11-27, unconfirmed)``. A fact's confidence
    stays in the packet: on every line of a fact-heavy block it cost a sixth of the budget
    and carried no memory (docs/decisions/2026-12-05-compact-block.md)."""
    notes = []
    if valid_from is not None:
        notes.append(f"since {valid_from.astimezone(UTC).date().isoformat()}")
    if unconfirmed:
        notes.append("unconfirmed")
    suffix = f" ({', '.join(notes)})" if notes else ""
    return f"[f{number}] {inline(fact_text(predicate, value))}{suffix}"


def group_of(occurred_at: datetime, thread_id: str | None) -> Group:
    """An episode's group: its day in UTC and its thread."""
    return occurred_at.astimezone(UTC).date(), thread_id


def group_header(group: Group) -> str:
    """``## 2026-11-20``, or ``## 2026-11-20 · support-42`` for a thread."""
    day, thread = group
    return f"## {day.isoformat()}" + (f" · {inline(thread)}" if thread is not None else "")


def episode_line(number: int, role: str | None, name: str | None, excerpt: str) -> str:
    """``[e1] Ana: text``."""
    return f"[e{number}] {said(role, name, excerpt)}"


def said(role: str | None, name: str | None, excerpt: str) -> str:
    """``Ana: text`` for a user's message with a name, ``assistant: text`` or
    ``assistant (Haki): text`` for another message (a ``role``), the text alone for any other
    episode. Between people every message is a user's, so the role would only repeat itself
    on each line; a name that starts like a role or a handle (``assistant``, ``[e2]``) is
    shown after the user's role, so no user can speak as the assistant."""
    if role is None:
        return inline(excerpt)
    if role == "user" and name and _stands_alone(shown := inline(name)):
        return f"{shown}: {inline(excerpt)}"
    who = f"{role} ({name})" if name else role
    return f"{inline(who)}: {inline(excerpt)}"


def _stands_alone(name: str) -> bool:
    """Whether a speaker's name can lead a line on its own: it starts with a letter or a
    digit, and its first word is not a message role."""
    first = _FIRST_WORD.match(name)
    return first is not None and first.group().casefold() not in MESSAGE_ROLES
