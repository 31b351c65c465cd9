"""One identity per name: the identifiers a client gives (project, subject, predicate, kind,
client event and message ids, idempotency keys) in one canonical spelling.

Unicode spells many names two ways: ``é`` as one code point or as ``e`` and a combining accent
(NFC and NFD), look the same and compare different. Every identifier is therefore stored and
compared in NFC, whatever spelling the client sends, so both spellings name one subject (an
erasure in either erases it). Characters that render as nothing or steer the display are
refused rather than kept: controls (C0, DEL, C1), format characters (Unicode category Cf: the
zero-width space and joiners, bidirectional overrides, the tag characters U+E0000–U+E007F, the
soft hyphen, the byte-order mark), surrogates and the line and paragraph separators; with them
``city`` and ``city`` plus a zero-width space would be two predicates.

A predicate is also a rule's key (facts of one subject and predicate are reinforced, superseded
or put in conflict): it may not mix letters of scripts that are told apart only by their
shapes (Latin, Greek, Cyrillic…), so ``city`` spelt with a Cyrillic ``с`` is refused rather than
made a second predicate; Han, Hiragana, Katakana and Hangul go with Latin, as Japanese, Chinese
and Korean writing does (Unicode's "highly restrictive" profile, UTS #39).
"""

import unicodedata

#: Unicode general categories an identifier may not hold.
_REFUSED = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
#: Scripts that mix with Latin and with each other in ordinary East Asian writing.
_EAST_ASIAN = frozenset({"CJK", "HIRAGANA", "KATAKANA", "HANGUL", "BOPOMOFO", "IDEOGRAPHIC"})


def canonical_identifier(text: str) -> str:
    """``text`` in NFC; a ``ValueError`` naming the first character an identifier may not hold
    (see the module doc)."""
    normal = unicodedata.normalize("NFC", text)
    for char in normal:
        if unicodedata.category(char) in _REFUSED:
            raise ValueError(f"must hold no control, invisible or format character "
                             f"(U+{ord(char):04X} at position {normal.index(char)})")
    return normal


def _script(char: str) -> str | None:
    """The script of a letter, as the first word of its Unicode name (``LATIN``, ``CYRILLIC``,
    ``CJK``…); ``None`` for anything else (digits, punctuation, combining marks)."""
    if not unicodedata.category(char).startswith("L"):
        return None
    return unicodedata.name(char, "UNKNOWN").split(" ", 1)[0]


def canonical_predicate(text: str) -> str:
    """:func:`canonical_identifier`, and a ``ValueError`` for letters of two scripts that do
    not go together (see the module doc)."""
    normal = canonical_identifier(text)
    scripts = {s for s in map(_script, normal) if s is not None}
    others = scripts - {"LATIN"} - _EAST_ASIAN
    if len(others) > 1 or (others and scripts - others):
        raise ValueError(f"mixes letters of the scripts {', '.join(sorted(scripts))} (a "
                         "predicate is written in one script, so that no look-alike of it "
                         "escapes its rules)")
    return normal
