"""Round trips read from a libpq protocol trace (``haki.db.protocol``): one per time the client
asks for answers, however the server's messages interleave with what the client still sends."""

from haki_local.protocol import ProtocolCounts


def _trace(*messages: str) -> str:
    return "\n".join(f"{m[0]}\t10\t{m[2:]}" for m in messages)


STATEMENT = ("F Parse\t \"\" \"SELECT 1\" 0", "F Bind", "F Describe", "F Execute")
BEGIN = ("F Parse\t \"\" \"BEGIN\" 0", "F Bind", "F Describe", "F Execute")


def _counts(text: str) -> ProtocolCounts:
    counts = ProtocolCounts()
    counts.add_trace(text)
    return counts


def test_a_pipeline_asked_once_is_one_round_trip() -> None:
    counts = _counts(_trace(*BEGIN, *STATEMENT, *STATEMENT, "F Sync", "F Flush",
                            "B ParseComplete", "B DataRow", "B ReadyForQuery"))
    assert (counts.statements, counts.transaction_control, counts.round_trips) == (2, 1, 1)


def test_answers_that_arrive_while_the_client_still_sends_are_no_round_trip() -> None:
    # The server flushed the first statement's large result before the second was sent.
    counts = _counts(_trace(*STATEMENT, "B ParseComplete", "B DataRow", *STATEMENT,
                            "B DataRow", *STATEMENT, "F Flush", "B DataRow"))
    assert counts.round_trips == 1 and counts.statements == 3


def test_each_fetch_and_each_simple_query_is_one() -> None:
    counts = _counts(_trace("F Query\t \"BEGIN\"", "B CommandComplete", "B ReadyForQuery",
                            *STATEMENT, "F Flush", "B DataRow",
                            *STATEMENT, "F Sync", "B DataRow", "B ReadyForQuery",
                            "F Query\t \"COMMIT\"", "B ReadyForQuery"))
    assert (counts.statements, counts.transaction_control, counts.round_trips) == (2, 2, 4)
