"""Query-biased excerpts: the window of a long message that holds the question's words."""

from haki.assembler.config import STOPWORDS
from haki.assembler.excerpt import ELLIPSIS, ExcerptFocus

FILLER = "We talked about the weather and the garden for a while. " * 8
LONG = (FILLER + "Then I synchronized the server clock with pool.ntp.org on Monday.\n"
        + "After that the logs were in order. " * 6)


def focus(query: str) -> ExcerptFocus:
    return ExcerptFocus.of(query, STOPWORDS)


def test_a_text_that_fits_is_served_whole() -> None:
    assert focus("ntp clock").excerpt("short text", 300) == "short text"


def test_the_window_holding_the_question_terms_is_served() -> None:
    excerpt = focus("Did I ever synchronize my clock with NTP?").excerpt(LONG, 200)
    assert excerpt.startswith(ELLIPSIS + "Then I synchronized the server clock")
    assert len(excerpt) == 200


def test_no_question_term_in_the_text_serves_its_start() -> None:
    assert focus("passport number").excerpt(LONG, 200) == LONG[:200]


def test_a_term_near_the_start_keeps_the_start() -> None:
    text = "The NTP server was down. " + FILLER * 3
    assert focus("ntp server").excerpt(text, 120) == text[:120]


def test_a_window_near_the_end_takes_the_room_before_it() -> None:
    text = FILLER + "Finally the passport arrived."
    excerpt = focus("passport").excerpt(text, 100)
    assert excerpt.endswith("Finally the passport arrived.")
    assert len(excerpt) == 100


def test_the_window_with_most_distinct_terms_wins() -> None:
    text = (FILLER + "The clock drifted.\n" + FILLER
            + "The clock was synchronized with NTP.\n" + FILLER)
    excerpt = focus("clock synchronized ntp").excerpt(text, 150)
    assert "The clock was synchronized with NTP." in excerpt


def test_terms_match_at_word_starts_only() -> None:
    text = FILLER * 2 + "An unsynchronised clock.\n" + FILLER
    assert focus("synchronise").excerpt(text, 100) == text[:100]


def test_stop_words_and_single_letters_are_not_terms() -> None:
    assert focus("what is the x of it").stems == frozenset()
    assert focus("Réservation à Lyon").stems == {"réser", "lyon"}
