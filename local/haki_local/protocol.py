"""Statements and round trips as the wire sees them, for benchmarks and tests.

libpq's protocol trace (``PQtrace``) logs every message the client sends (``F``) and receives
(``B``). A **round trip** is one time the client asks for the server's answers and waits for
them: a ``Sync`` or ``Flush`` message (psycopg sends one, or ``Sync`` then ``Flush``, each time
it fetches results), or a simple-protocol ``Query``. Counting the turns where received
messages follow sent ones instead over-counts a pipeline: a server that flushes a large result
early (its output buffer is 8 kB) lands between two statements the client is still sending,
which no one waits for. A **statement** is one
``Execute`` (extended protocol, what psycopg sends) or ``Query`` (simple protocol) message;
transaction control (BEGIN [READ ONLY], COMMIT, ROLLBACK) is counted apart. Nothing is
hand-kept: the counts are what went over the connection, pipelining included.
"""

import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import psycopg
from psycopg import pq

_MESSAGE = re.compile(r"^([FB])\t\d+\t(\w+)(?:\t (.*))?$")
#: The statement text of a ``Parse`` (``"" "BEGIN" 0``) or ``Query`` (``"BEGIN"``) message.
_CONTROL = re.compile(r'^(?:"" )?"(BEGIN|BEGIN READ ONLY|COMMIT|ROLLBACK)"', re.IGNORECASE)


@dataclass
class ProtocolCounts:
    #: ``Execute`` / ``Query`` messages other than transaction control.
    statements: int = 0
    #: BEGIN, COMMIT and ROLLBACK.
    transaction_control: int = 0
    #: Client-to-server turns each followed by the server's answer.
    round_trips: int = 0

    def add_trace(self, text: str) -> None:
        asked = False  # the last client message asked for answers (Sync / Flush)
        control = False  # the statement being sent is BEGIN / COMMIT / ROLLBACK
        for line in text.splitlines():
            match = _MESSAGE.match(line)
            if match is None:
                continue  # the continuation of a multi-line statement's text
            direction, message, args = match.groups()
            if direction == "F" and message in ("Parse", "Query"):
                control = bool(_CONTROL.match(args or ""))
            if direction == "F" and message in ("Execute", "Query"):
                if control:
                    self.transaction_control += 1
                else:
                    self.statements += 1
            if direction != "F":
                continue
            if message == "Query" or (message in ("Sync", "Flush") and not asked):
                self.round_trips += 1
            asked = message in ("Sync", "Flush")


@contextmanager
def count_protocol(conn: psycopg.Connection) -> Iterator[ProtocolCounts]:
    """Count what ``conn`` sends and receives inside the block (filled in at exit)."""
    counts = ProtocolCounts()
    with tempfile.TemporaryFile() as log:
        conn.pgconn.trace(log.fileno())
        conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
        try:
            yield counts
        finally:
            conn.pgconn.untrace()
            log.seek(0)
            counts.add_trace(log.read().decode("utf-8", errors="replace"))
