"""Query-biased excerpts: the part of a long message that holds the question's words.

A long message (a reply with code, a log, a list) rarely carries its evidence in its first few
hundred characters, so an episode's excerpt is the window of the message, cut at sentence or
line starts, that holds the most distinct query terms; a message with none of them is served
from its start. Terms match on their first :data:`STEM_CHARS` characters, a crude stemmer that
serves English and French alike ("synchronized" meets "synchronize", "réservation" meets
"réserver"). An excerpt has the length a cut from the start would have, so the budget charges
an episode the same whatever window it serves, and the window is only chosen for the episodes
that are packed.
"""

import re
from collections.abc import Collection
from dataclasses import dataclass, field

#: Characters of a word that a query term must share with it.
STEM_CHARS = 5
#: Marks a window that does not start at the message's start.
ELLIPSIS = "…"

_WORD = re.compile(r"\w+")
#: Where a window may start: after a sentence's end or at a new line.
_SEGMENT_START = re.compile(r"(?:(?<=[.!?:;])\s+|\n\s*)(?=\S)")


@dataclass(frozen=True)
class ExcerptFocus:
    """The question's terms, compiled once per call."""

    stems: frozenset[str]
    _pattern: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        pattern = (re.compile("|".join(sorted(map(re.escape, self.stems), key=len, reverse=True)),
                              re.IGNORECASE) if self.stems else None)
        object.__setattr__(self, "_pattern", pattern)

    @classmethod
    def of(cls, query: str, stopwords: Collection[str]) -> "ExcerptFocus":
        """The stems of the query's words, less stop words and single letters."""
        return cls(frozenset(word[:STEM_CHARS] for word in _WORD.findall(query.lower())
                             if len(word) > 1 and word not in stopwords))

    def excerpt(self, text: str, max_chars: int) -> str:
        """At most ``max_chars`` of ``text``: all of it when it fits, else the window that
        holds the most distinct query terms (its start when none is there)."""
        if len(text) <= max_chars:
            return text
        hits = self._hits(text)
        if not hits:
            return text[:max_chars]
        # The window with the most distinct terms; of the windows holding the same first
        # hit, the one that starts latest, so the matching sentence leads.
        best_start, best_terms = 0, len({stem for position, stem in hits if position < max_chars})
        best_first = hits[0][0]
        for start in (m.end() for m in _SEGMENT_START.finditer(text, 0, len(text) - 1)):
            end = start + max_chars - len(ELLIPSIS)
            inside = [(position, stem) for position, stem in hits if start <= position < end]
            terms = len({stem for _, stem in inside})
            if terms > best_terms:
                best_start, best_terms, best_first = start, terms, inside[0][0]
            elif terms == best_terms and inside and start <= best_first == inside[0][0]:
                best_start = start
        if best_start == 0:
            return text[:max_chars]
        # A window near the end takes the room left before it.
        start = min(best_start, len(text) - (max_chars - len(ELLIPSIS)))
        return ELLIPSIS + text[start:start + max_chars - len(ELLIPSIS)]

    def _hits(self, text: str) -> list[tuple[int, str]]:
        """(position, stem) of each word of ``text`` that starts with a query stem."""
        if self._pattern is None:
            return []
        hits = []
        for match in self._pattern.finditer(text):
            position = match.start()
            if position and (text[position - 1].isalnum() or text[position - 1] == "_"):
                continue  # inside a word, not at its start
            hits.append((position, match.group().lower()))
        return hits
