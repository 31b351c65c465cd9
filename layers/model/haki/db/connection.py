"""Connections: one lazily opened psycopg 3 connection per process, reused while it lives.

Settings are RDS-Proxy-safe: no server-side prepared statements (``prepare_threshold=None``,
so the proxy never pins a client to one backend) and no session state — the tenant scope is
set per transaction with ``set_config(..., true)``, which the row-level policies read.
A Lambda container keeps the connection between invocations; a dropped connection (proxy
idle timeout, failover) is replaced on the next transaction.

Every wait is bounded (docs/security.md, "Deadlines"): the connect (``connect_timeout``),
a silent network (TCP keepalives and ``tcp_user_timeout``), each statement on the server
(``statement_timeout``) and, on the client, each transaction (:class:`Watchdog`): a database
that stops answering without closing its socket (frozen, partitioned) costs one bounded wait,
then 503 ``service_unavailable``, and the next transaction opens a new connection. A
request's own time (:func:`request_deadline`) caps all of them. Only psycopg's public API is
used: the client's bound shuts the connection's socket down (``Connection.fileno``), which
ends psycopg's wait with an ordinary ``OperationalError``.
"""

import heapq
import itertools
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

import psycopg
from pgvector.psycopg import register_vector
from psycopg import pq
from psycopg.conninfo import make_conninfo

from haki.errors import (
    ForbiddenScope,
    ServiceUnavailable,
    Unauthorized,
)

log = logging.getLogger(__name__)

#: Connect timeout: the API should answer 503 quickly rather than hang on a dead database.
#: (libpq's smallest is 2 s.)
CONNECT_TIMEOUT_S = 5
#: TCP keepalives and ``tcp_user_timeout`` (libpq parameters; a Unix socket ignores them): a
#: peer gone silent (failover, partition) is found dead by the kernel within these bounds even
#: when no statement of ours is waiting on it.
TCP_PARAMS = {"keepalives": 1, "keepalives_idle": 30, "keepalives_interval": 10,
              "keepalives_count": 3, "tcp_user_timeout": 10_000}
#: How long past its statement timeout the client waits for a transaction before it gives the
#: connection up: the server cancels a slow statement itself within the timeout, so an answer
#: later than this means a server (or a path to it) that no longer answers at all.
ANSWER_GRACE_S = 1.0
#: What a request keeps of its own time to answer once the database has not (a Lambda's
#: response and its logs).
DEADLINE_MARGIN_S = 0.5
#: A kept connection unused for longer than this is probed before a pipelined transaction
#: (RDS Proxy drops idle clients after 15 minutes; a Lambda container idles between calls).
#: A busy one is not: its first round trip carries real work (see ``Database.transaction``).
PROBE_AFTER_IDLE_S = 30.0


class AnswerTimeout(psycopg.OperationalError):
    """The database did not answer within the transaction's bound; the connection was shut
    (its protocol state is unknown)."""


class Alarm:
    """One armed bound on one connection (see :class:`Watchdog`)."""

    __slots__ = ("deadline", "fileno", "fired")

    def __init__(self, deadline: float, fileno: int) -> None:
        self.deadline = deadline
        self.fileno = fileno
        self.fired = False


class Watchdog:
    """Shuts a connection's socket down once its alarm's deadline passes.

    One daemon thread per process sleeps until the earliest deadline; arming and disarming
    cost a lock and a heap push, never a thread. Shutting the socket (``shutdown(2)`` on a
    duplicate of its descriptor) wakes psycopg's wait at once with an ``OperationalError``;
    the connection is then unusable and is replaced. An alarm is always disarmed before its
    connection is closed, so a descriptor is never shut after it was reused.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Alarm]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None

    def arm(self, conn: psycopg.Connection, seconds: float) -> Alarm:
        alarm = Alarm(time.monotonic() + seconds, conn.fileno())
        with self._cond:
            # The thread sleeps until the earliest deadline, disarmed alarms included (dropped
            # when it wakes): it is woken only when this one comes first, not on every call.
            earliest = not self._heap or alarm.deadline < self._heap[0][0]
            heapq.heappush(self._heap, (alarm.deadline, next(self._order), alarm))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="haki-db-watchdog",
                                                daemon=True)
                self._thread.start()
            if earliest:
                self._cond.notify()
        return alarm

    def disarm(self, alarm: Alarm) -> None:
        with self._cond:
            alarm.fileno = -1  # the sleeping thread drops it when it comes up

    def _run(self) -> None:
        with self._cond:
            while True:
                if not self._heap:
                    self._cond.wait()
                    continue
                wait = self._heap[0][0] - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                alarm = heapq.heappop(self._heap)[2]
                if alarm.fileno >= 0:  # not disarmed
                    alarm.fired = True
                    _shut(alarm.fileno)


def _shut(fileno: int) -> None:
    """End every wait on socket ``fileno`` (a duplicate is shut, then closed)."""
    try:
        with socket.socket(fileno=os.dup(fileno)) as sock:
            sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # already closed by the peer
        pass


#: The process's watchdog (one thread, started on first use).
WATCHDOG = Watchdog()


#: When the current request must have its answer (``time.monotonic()``), if it has a bound;
#: see :func:`request_deadline`.
_DEADLINE: ContextVar[float | None] = ContextVar("haki_deadline", default=None)


@contextmanager
def request_deadline(remaining_ms: float | None) -> Iterator[None]:
    """Bound every database wait in this context to end ``DEADLINE_MARGIN_S`` before
    ``remaining_ms`` from now (a Lambda's ``get_remaining_time_in_millis()``; None: no
    bound): statement timeouts, answer waits and connects are cut to what is left, and a
    transaction that would start with nothing left is refused at once with 503."""
    deadline = None if remaining_ms is None else (
        time.monotonic() + remaining_ms / 1000 - DEADLINE_MARGIN_S)
    token = _DEADLINE.set(deadline)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def time_left_s() -> float | None:
    """Seconds left before the current request's deadline (None: no deadline)."""
    deadline = _DEADLINE.get()
    return None if deadline is None else deadline - time.monotonic()


def connect(conninfo: str) -> psycopg.Connection:
    """Open an autocommit connection with the vector type registered.

    Autocommit: transactions are explicit (``conn.transaction()``), so nothing stays open
    between calls. ``prepare_threshold=None``: never prepare server-side (RDS Proxy pinning).
    The connect is bounded by ``CONNECT_TIMEOUT_S`` (less when the request has less left).
    """
    left = time_left_s()
    timeout = CONNECT_TIMEOUT_S if left is None else max(2, min(CONNECT_TIMEOUT_S, int(left)))
    conn = psycopg.Connection.connect(
        make_conninfo(conninfo, connect_timeout=timeout, **TCP_PARAMS),
        autocommit=True,
        prepare_threshold=None,
        application_name="haki",
    )
    register_vector(conn)
    return conn


#: The sha256 of the API key the current request (or task) acts for; see :func:`acting_for`.
_ACTING_FOR: ContextVar[str | None] = ContextVar("haki_acting_for", default=None)


@contextmanager
def acting_for(key_hash: str) -> Iterator[None]:
    """Bind every tenant transaction opened in this context to the key whose sha256 is
    ``key_hash``: row-level security then shows the key's project and nothing else
    (``haki_tenant``). The API edge binds the authenticated key around each request; tools and
    tests bind a key they made."""
    token = _ACTING_FOR.set(key_hash)
    try:
        yield
    finally:
        _ACTING_FOR.reset(token)


#: Transaction-local settings of a tenant transaction, and the key's project to check against.
_SCOPE = """
SELECT set_config('haki.key_hash', %(key_hash)s, true),
       set_config('TimeZone', 'UTC', true),
       CASE WHEN %(timeout)s > 0 THEN set_config('statement_timeout', %(timeout)s::text, true)
       END,
       CASE WHEN %(key_hash)s <> '' THEN haki_tenant() END,
       CASE WHEN NOT %(durable)s THEN set_config('synchronous_commit', 'off', true) END
"""


def set_scope(
    conn: psycopg.Connection, project_id: str | None, *, statement_timeout_ms: int = 0,
    durable: bool = True,
) -> psycopg.Cursor:
    """Bind the current transaction to the key this context acts for (:func:`acting_for`) when
    it works in ``project_id``, and bound each of its statements to ``statement_timeout_ms``
    (0: the server's setting). Not ``durable``: its COMMIT returns before its WAL is flushed
    (``synchronous_commit = off``; the WAL writer flushes it within 3 × ``wal_writer_delay``,
    and a server crash in that window loses the transaction whole, never part of it).

    Every transaction works in UTC (``TimeZone``), whatever the database's default: a stored
    time is read the same everywhere, and the last instant accepted (9999-12-31T23:59:59Z) is
    never sent back as year 10000, which no client can parse.

    Transaction-local (``is_local = true``): all end with the transaction, so a pooled or
    proxied connection never carries one tenant's key into another's request. The cursor's row
    holds the key's project (read it with :func:`check_scope` once the statement has run).
    Without a bound key the runtime role sees nothing; the owner passes its own policy.
    """
    key_hash = (_ACTING_FOR.get() or "") if project_id is not None else ""
    return conn.execute(_SCOPE, {"key_hash": key_hash, "timeout": statement_timeout_ms,
                                 "durable": durable})


def check_scope(cursor: psycopg.Cursor, project_id: str) -> None:
    """The bound key's project must be ``project_id``: a revoked key is :class:`Unauthorized`,
    another project's :class:`ForbiddenScope` (defence in depth: the edge checked both)."""
    if _ACTING_FOR.get() is None:
        return
    row = cursor.fetchone()
    tenant = row[3] if row else None
    if tenant is None:
        raise Unauthorized("a valid API key is required: Authorization: Bearer hk_...")
    if tenant != project_id:
        raise ForbiddenScope("this API key is not valid for the requested project")


class Database:
    """A process-wide handle: one connection, opened on first use, replaced when dropped.

    ``conninfo`` is a URL or a callable returning one (an IAM auth token expires after 15
    minutes, so a deployment passes a callable that mints a fresh token per connect).
    """

    def __init__(
        self, conninfo: str | Callable[[], str], *, statement_timeout_ms: int = 0,
        probe_after_idle_s: float = PROBE_AFTER_IDLE_S,
    ) -> None:
        self._conninfo = conninfo
        self._statement_timeout_ms = statement_timeout_ms
        self._probe_after_idle_s = probe_after_idle_s
        self._conn: psycopg.Connection | None = None
        self._last_used = 0.0
        self._sibling: Database | None = None

    def conninfo(self) -> str:
        """The URL to connect with now (a callable mints it afresh each time)."""
        return self._conninfo() if callable(self._conninfo) else self._conninfo

    def _open(self) -> psycopg.Connection:
        try:
            return connect(self.conninfo())
        except psycopg.OperationalError as exc:
            log.warning("database connection failed: %s", type(exc).__name__)
            raise ServiceUnavailable("the memory store is unavailable, retry shortly") from exc

    def statement_timeout_ms(self) -> int:
        """The bound of each statement now: the handle's, cut to what the request has left
        (:func:`request_deadline`); 0 is the server's setting. Nothing left: 503 at once."""
        left = time_left_s()
        if left is None:
            return self._statement_timeout_ms
        if left <= 0:
            raise ServiceUnavailable("the request's time ran out before the memory store "
                                     "answered, retry shortly")
        left_ms = max(1, int(left * 1000))
        return min(self._statement_timeout_ms, left_ms) if self._statement_timeout_ms else (
            left_ms)

    def answer_timeout_s(self, statement_timeout_ms: int) -> float | None:
        """How long the client waits for a transaction: the statement timeout and
        ``ANSWER_GRACE_S``, within what the request has left (None: unbounded)."""
        bound = statement_timeout_ms / 1000 + ANSWER_GRACE_S if statement_timeout_ms else None
        left = time_left_s()
        if left is not None:
            bound = max(0.001, left) if bound is None else max(0.001, min(bound, left))
        return bound

    def connection(self) -> psycopg.Connection:
        """The live connection, (re)opened when missing, closed or broken."""
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._conn = self._open()
            self._last_used = time.monotonic()  # just opened: nothing to probe
        return self._conn

    @contextmanager
    def _bounded(self, deadline: float | None) -> Iterator[psycopg.Connection]:
        """The live connection, shut down by the watchdog if the work done with it in this
        block is still waiting for the database at ``deadline`` (``time.monotonic()``; None:
        no bound); then :class:`AnswerTimeout` is raised in place of the wait's error."""
        conn = self.connection()
        if deadline is None:
            yield conn
            return
        alarm = WATCHDOG.arm(conn, deadline - time.monotonic())
        try:
            yield conn
        except psycopg.OperationalError as exc:
            if alarm.fired:
                raise AnswerTimeout("no answer from the database in time") from exc
            raise
        finally:
            WATCHDOG.disarm(alarm)

    def _deadline(self, statement_timeout_ms: int) -> float | None:
        bound = self.answer_timeout_s(statement_timeout_ms)
        return None if bound is None else time.monotonic() + bound

    def _probe(self, deadline: float | None) -> None:
        """One cheap round trip on a connection idle longer than ``probe_after_idle_s``; a
        dead one is replaced."""
        if time.monotonic() - self._last_used <= self._probe_after_idle_s:
            return
        try:
            with self._bounded(deadline) as conn:
                conn.execute("SELECT 1")
        except psycopg.OperationalError:
            log.info("replacing a dropped database connection")
            self.close()

    def fetch_one(self, query: str, params: Mapping[str, object] | Sequence[object]
                  ) -> tuple[object, ...] | None:
        """One read-only statement outside any transaction (autocommit: a single round trip),
        on a connection replaced once if found dead."""
        deadline = self._deadline(self._statement_timeout_ms)
        for attempt in (1, 2):
            try:
                with self._bounded(deadline) as conn:
                    row = conn.execute(query, params).fetchone()
                self._last_used = time.monotonic()
                return row
            except psycopg.OperationalError as exc:
                self.close()
                if attempt == 2 or isinstance(exc, AnswerTimeout):
                    raise ServiceUnavailable(
                        "the memory store is unavailable, retry shortly") from exc
        raise AssertionError("unreachable")

    def sibling(self) -> "Database":
        """A second handle on the same database, with its own connection (opened on first
        use, replaced when dropped, closed with this one), for work that runs beside this
        handle's transaction: the context call's nearest facts (``assembler.arms``)."""
        if self._sibling is None:
            self._sibling = Database(self._conninfo,
                                     statement_timeout_ms=self._statement_timeout_ms,
                                     probe_after_idle_s=self._probe_after_idle_s)
        return self._sibling

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._sibling is not None:
            self._sibling.close()

    @contextmanager
    def _plain(self, project_id: str | None, *, durable: bool
               ) -> Iterator[psycopg.Connection]:
        """A transaction (psycopg's), its scope set and checked before any work; a kept
        connection found dead by that first round trip is replaced once, within the same
        deadline."""
        timeout_ms = self.statement_timeout_ms()
        deadline = self._deadline(timeout_ms)
        for attempt in (1, 2):
            started = False
            try:
                with self._bounded(deadline) as conn, conn.transaction():
                    scope = set_scope(conn, project_id, durable=durable,
                                      statement_timeout_ms=timeout_ms)
                    started = True
                    if project_id is not None:
                        check_scope(scope, project_id)  # raising rolls the transaction back
                    yield conn
                return
            except psycopg.OperationalError as exc:
                if started or attempt == 2 or isinstance(exc, AnswerTimeout):
                    raise
                self.close()
                log.info("replacing a dropped database connection")

    @contextmanager
    def transaction(
        self, project_id: str | None = None, *, pipeline: bool = False, read_only: bool = False,
        durable: bool = True,
    ) -> Iterator[psycopg.Connection]:
        """A transaction, scoped to ``project_id`` for row-level security when given.

        Plain: its first round trip (BEGIN and the scope) doubles as a liveness check, so a
        kept connection found dead (server restart, proxy idle timeout) is replaced before any
        work is done. ``pipeline`` (psycopg pipeline mode) saves two round trips instead:
        BEGIN and the scope are queued with the caller's first statements, whose sync is the
        transaction's first round trip, and COMMIT leaves with its last ones — a context call
        is then one round trip for retrieval and one for the trace with the commit. A kept
        connection idle for long is probed first; one that dies while busy fails that call.
        A connection lost becomes :class:`ServiceUnavailable`; nothing is half-written because
        the transaction rolls back with it. The key's project is checked before the commit
        (pipelined) or before any work (plain). ``read_only`` (pipelined only): the server
        refuses any write, so COMMIT leaves with the block's statements and the key's project
        is checked once their one round trip is back. ``durable`` off: the commit does not
        wait for the WAL flush (:func:`set_scope`); for a context call's trace only.
        """
        try:
            if pipeline:
                with self._pipelined(project_id, read_only=read_only, durable=durable) as conn:
                    yield conn
            else:
                with self._plain(project_id, durable=durable) as conn:
                    yield conn
        except psycopg.errors.QueryCanceled as exc:
            # The statement timeout: the transaction rolled back, the connection is sound.
            log.warning("a statement exceeded the statement timeout")
            raise ServiceUnavailable(
                "the memory store did not answer in time, retry shortly") from exc
        except AnswerTimeout as exc:
            # No answer at all: the connection is closed; the next transaction opens another.
            log.warning("the database did not answer within the client's bound")
            self.close()
            raise ServiceUnavailable(
                "the memory store did not answer in time, retry shortly") from exc
        except psycopg.OperationalError as exc:
            self.close()
            raise ServiceUnavailable("the memory store is unavailable, retry shortly") from exc
        finally:
            self._last_used = time.monotonic()

    @contextmanager
    def _pipelined(self, project_id: str | None, *, read_only: bool = False,
                   durable: bool = True) -> Iterator[psycopg.Connection]:
        """BEGIN and the scope queued, the caller's statements, the scope checked, COMMIT.

        BEGIN and COMMIT are sent as statements: psycopg's transaction context, inside a
        pipeline, syncs after BEGIN and before COMMIT, two round trips more for a context call.
        Read-only, the check waits for the commit: there is nothing it could let through."""
        timeout_ms = self.statement_timeout_ms()
        deadline = self._deadline(timeout_ms)
        self._probe(deadline)
        committed = False
        try:
            with self._bounded(deadline) as conn, conn.pipeline():
                conn.execute("BEGIN READ ONLY" if read_only else "BEGIN")
                scope = set_scope(conn, project_id, durable=durable,
                                  statement_timeout_ms=timeout_ms)
                yield conn
                if project_id is not None and not read_only:
                    check_scope(scope, project_id)
                conn.execute("COMMIT")
            committed = True
        finally:
            if not committed:
                self._roll_back()
        if project_id is not None and read_only:
            check_scope(scope, project_id)

    def _roll_back(self) -> None:
        """End what a failed pipelined transaction left open; drop a connection that cannot."""
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            self.close()
            return
        try:
            if conn.info.transaction_status != pq.TransactionStatus.IDLE:
                with self._bounded(time.monotonic() + ANSWER_GRACE_S):
                    conn.execute("ROLLBACK")
        except psycopg.Error:
            self.close()
