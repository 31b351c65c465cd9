"""Rule-based entity detection for multi-hop expansion: no NER model, no LLM.

Capitalised tokens (``[A-ZÀ-Ý][a-zà-ÿ]{2,}``) of the included facts, ranked by frequency,
minus common sentence-initial words and minus words the query already contains — the point is
to reach facts linked by a shared name that the query did not mention.
"""

import re
from collections import Counter
from collections.abc import Iterable

ENTITY_PATTERN = re.compile(r"[A-ZÀ-Ý][a-zà-ÿ]{2,}")
_WORD = re.compile(r"\w+")

#: Capitalised only because they open a sentence (English and French).
COMMON_WORDS = frozenset(
    """
    the and but for with this that these those there then when where what which who how his her
    its our their your from into about after before also only other some such yes not all any
    each more most very les des une uns aux avec dans pour par sur sous mais donc car puis ces
    cet cette son sa ses leur leurs notre nos votre vos elle ils elles nous vous qui que quoi
    quand comme chez tout tous toute toutes oui non est sont
    """.split()
)


def extract_entities(texts: Iterable[str], query: str, limit: int) -> list[str]:
    """The ``limit`` most frequent entities of ``texts`` not present in ``query``.

    Ties keep first-seen order, so the result is deterministic for a given packet.
    """
    query_words = {w.lower() for w in _WORD.findall(query)}
    counts: Counter[str] = Counter()
    for text in texts:
        for token in ENTITY_PATTERN.findall(text):
            lowered = token.lower()
            if lowered in COMMON_WORDS or lowered in query_words:
                continue
            counts[token] += 1
    return [entity for entity, _ in counts.most_common(limit)]
