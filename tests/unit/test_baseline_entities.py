"""Multi-hop entity detection: rule-based, deterministic, bounded."""

from haki_local.entities import extract_entities


def test_ranked_by_frequency_then_first_seen() -> None:
    texts = ["Bernard met Claire in Lyon", "Claire called Bernard", "Claire again"]
    assert extract_entities(texts, "who", 2) == ["Claire", "Bernard"]


def test_query_words_and_sentence_openers_are_excluded() -> None:
    texts = ["The manager is Bernard", "Les factures vont à Claire", "And Zoé"]
    assert extract_entities(texts, "is bernard the manager?", 5) == ["Claire", "Zoé"]


def test_pattern_needs_three_letters_and_accents_count() -> None:
    texts = ["Al and Bo met Éloïse at ÀBC and Renée"]
    # "Al"/"Bo" are too short; "ÀBC" is not capitalised-then-lowercase.
    assert extract_entities(texts, "", 5) == ["Éloïse", "Renée"]


def test_limit_and_empty() -> None:
    assert extract_entities(["Anna Bert Carl Dora"], "", 2) == ["Anna", "Bert"]
    assert extract_entities([], "anything", 2) == []
