"""Seeding helpers for the assembler tests (rows with chosen embeddings and attributes, written
as the owner so a test controls every column the rules look at), and ``writes``: the memory
write API's core as its handlers will call it."""

import json
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import numpy as np
import psycopg
import pytest

from haki.assembler import (
    DEFAULT_CONFIG,
    Assembly,
    RetrievalConfig,
    assemble,
)
from haki.db import Database, Role
from haki.db.connection import acting_for, connect, set_scope
from haki.embedding import Embedder
from haki.memory.api import (
    ConflictListRequest,
    ConflictPage,
    EventsRequest,
    EventsResponse,
    FactListRequest,
    FactPage,
    FactsRequest,
    FactsResponse,
    FactStatusRequest,
    FactStatusResponse,
    FactWritten,
    ForgetRequest,
    ForgetResponse,
    ResolveRequest,
    ResolveResponse,
)
from haki.memory.conflicts import list_conflicts, resolve
from haki.memory.events import ingest_events
from haki.memory.facts import list_facts, set_fact_status, write_facts
from haki.memory.forget import forget
from haki.memory.store import lock_scopes
from haki.models import ContextRequest
from haki.validation import parse
from haki_local.admin import tenant_keys
from tests.conftest import concurrently, eventually

NOW = datetime.now(UTC)
T = TypeVar("T")


def unit_vector(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
    return v / np.linalg.norm(v)


def uniform_vector() -> np.ndarray:
    """The unit vector of equal components (every fact seeded with it matches a search)."""
    v = np.ones(384, dtype=np.float32)
    return v / np.linalg.norm(v)


def blend(a: np.ndarray, b: np.ndarray, weight_b: float) -> np.ndarray:
    """A unit vector between ``a`` and ``b`` (cosine to ``a`` falls as ``weight_b`` grows)."""
    v = (1 - weight_b) * a + weight_b * b
    return (v / np.linalg.norm(v)).astype(np.float32)


@dataclass
class Seeder:
    conn: psycopg.Connection
    project_id: str
    subject_id: str = "alice"

    def fact(self, predicate: str, value: Any, embedding: np.ndarray, *,
             subject_id: str | None = None, **columns: Any) -> uuid.UUID:
        columns.setdefault("recorded_from", NOW - timedelta(days=1))
        names = ["id", "project_id", "subject_id", "predicate", "value", "embedding", *columns]
        fact_id = uuid.uuid4()
        values = [fact_id, self.project_id, subject_id or self.subject_id, predicate,
                  json.dumps(value), embedding, *columns.values()]
        self.conn.execute(
            f"INSERT INTO facts ({', '.join(names)}) VALUES ({', '.join(['%s'] * len(names))})",
            values)
        return fact_id

    def event(self, kind: str, payload: dict[str, Any], embedding: np.ndarray,
              occurred_at: datetime = NOW) -> uuid.UUID:
        event_id = uuid.uuid4()
        self.conn.execute(
            "INSERT INTO events (id, project_id, subject_id, kind, payload, occurred_at, "
            "embedding) VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (event_id, self.project_id, self.subject_id, kind, json.dumps(payload),
             occurred_at, embedding))
        return event_id

    def conflict(self, fact_ids: list[uuid.UUID], status: str = "open") -> uuid.UUID:
        conflict_id = uuid.uuid4()
        self.conn.execute(
            "INSERT INTO conflict_sets (id, project_id, subject_id, fact_ids, status, "
            "resolved_at) VALUES (%s, %s, %s, %s, %s, %s)",
            (conflict_id, self.project_id, self.subject_id, fact_ids, status,
             NOW if status == "resolved" else None))
        return conflict_id


@pytest.fixture
def owner(urls: dict[Role, str]) -> Iterator[psycopg.Connection]:
    """An owner connection to the database of a module that has one of its own (its ``urls``
    fixture)."""
    with connect(urls[Role.OWNER]) as conn:
        yield conn


@pytest.fixture
def seed(owner_conn: psycopg.Connection, project_id: str) -> Iterator[Seeder]:
    yield Seeder(owner_conn, project_id)


@dataclass
class Asker:
    """Runs ``assemble`` in the test's scope with a chosen query vector (no embedder)."""

    db: Database
    project_id: str

    def __call__(self, query: str, vector: np.ndarray, *, subject_id: str = "alice",
                 budget: int = 900, purpose: str | None = "test",
                 config: RetrievalConfig = DEFAULT_CONFIG) -> Assembly:
        request = ContextRequest(project_id=self.project_id, subject_id=subject_id,
                                 query=query, purpose=purpose, budget_tokens=budget)
        return assemble(request, lambda: vector, db=self.db, config=config)


@pytest.fixture
def ask(app_db: Database, project_id: str) -> Asker:
    return Asker(app_db, project_id)


def trace_rows(conn: psycopg.Connection, trace_id: uuid.UUID) -> list[dict[str, Any]]:
    cursor = conn.cursor(row_factory=psycopg.rows.dict_row)
    return cursor.execute(
        "SELECT * FROM context_trace_decisions WHERE trace_id = %s ORDER BY ordinal", (trace_id,)
    ).fetchall()


@dataclass
class Writes:
    """The memory write API's core, called as a handler would: the body validated into its
    request model, then one core function with the key's project (``project_id``)."""

    db: Database
    embedder: Embedder
    project_id: str
    owner: psycopg.Connection
    #: The hash of a key of ``project_id`` the calls act for (made when not given).
    key_hash: str = ""

    def __post_init__(self) -> None:
        if not self.key_hash:
            owner = Database(self.owner.info.dsn)
            try:
                self.key_hash = tenant_keys(owner, [self.project_id], org_id="org-test",
                                            label="tests")[self.project_id]
            finally:
                owner.close()

    def events(self, *events: dict[str, Any], project_id: str | None = None) -> EventsResponse:
        body = {"project_id": project_id or self.project_id,
                "events": [{"subject_id": "alice", "kind": "conversation.message", **e}
                           for e in events]}
        with acting_for(self.key_hash):
            return ingest_events(self.db, self.embedder, self.project_id,
                                 parse(EventsRequest, body))

    def facts(self, *facts: dict[str, Any]) -> FactsResponse:
        body = {"project_id": self.project_id,
                "facts": [{"subject_id": "alice", **f} for f in facts]}
        with acting_for(self.key_hash):
            return write_facts(self.db, self.embedder, self.project_id,
                               parse(FactsRequest, body))

    def fact(self, predicate: str, value: Any, **fields: Any) -> FactWritten:
        return self.facts({"predicate": predicate, "value": value, **fields}).facts[0]

    def status(self, fact_id: uuid.UUID, status: str) -> FactStatusResponse:
        body = {"project_id": self.project_id, "status": status}
        with acting_for(self.key_hash):
            return set_fact_status(self.db, self.project_id, fact_id,
                                   parse(FactStatusRequest, body))

    def list_facts(self, **query: Any) -> FactPage:
        body = {"project_id": self.project_id, "subject_id": "alice", **query}
        with acting_for(self.key_hash):
            return list_facts(self.db, self.project_id, parse(FactListRequest, body))

    def conflicts(self, **query: Any) -> ConflictPage:
        body = {"project_id": self.project_id, "subject_id": "alice", **query}
        with acting_for(self.key_hash):
            return list_conflicts(self.db, self.project_id, parse(ConflictListRequest, body))

    def resolve(self, conflict_id: uuid.UUID, keep: uuid.UUID) -> ResolveResponse:
        body = {"project_id": self.project_id, "keep_fact_id": str(keep)}
        with acting_for(self.key_hash):
            return resolve(self.db, self.project_id, conflict_id, parse(ResolveRequest, body))

    def forget(self, **body: Any) -> ForgetResponse:
        with acting_for(self.key_hash):
            return forget(self.db, self.project_id,
                          parse(ForgetRequest, {"project_id": self.project_id, **body}))

    def ask(self, query: str, subject_id: str = "alice") -> Assembly:
        """A context call right after the writes, with the real embedder."""
        request = ContextRequest(project_id=self.project_id, subject_id=subject_id,
                                 query=query, purpose="test")
        with acting_for(self.key_hash):
            return assemble(request, lambda: self.embedder.embed_query(query), db=self.db,
                            config=DEFAULT_CONFIG)

    def count(self, table: str, **where: Any) -> int:
        """Rows of ``table`` in this project matching ``where`` (as the owner: all of them)."""
        clauses = ["project_id = %s", *(f"{column} = %s" for column in where)]
        row = self.owner.execute(
            f"SELECT count(*) FROM {table} WHERE {' AND '.join(clauses)}",
            (self.project_id, *where.values())).fetchone()
        assert row is not None
        return int(row[0])

    def row(self, table: str, row_id: uuid.UUID) -> dict[str, Any]:
        """The row of ``table`` with id ``row_id`` (as the owner); there must be one."""
        cursor = self.owner.cursor(row_factory=psycopg.rows.dict_row)
        row = cursor.execute(f"SELECT * FROM {table} WHERE id = %s", (row_id,)).fetchone()
        assert row is not None, f"no row {row_id} in {table}"
        return row


@pytest.fixture
def writes(app_db: Database, embedder: Embedder, project_id: str,
           owner_conn: psycopg.Connection, tenant_key: str) -> Writes:
    return Writes(app_db, embedder, project_id, owner_conn, tenant_key)


def run_together(app_url: str, call: Callable[[Database], T], times: int = 2) -> list[T]:
    """``call`` in ``times`` threads released together (:func:`concurrently`), each with a
    runtime-role handle of its own; their results."""

    def with_own_handle() -> T:
        db = Database(app_url)
        try:
            return call(db)
        finally:
            db.close()

    return concurrently(with_own_handle, times)


@contextmanager
def uncommitted_fact(app_url: str, project_id: str, embedding: np.ndarray,
                     ) -> Iterator[psycopg.Connection]:
    """A transaction that holds the key of alice's ``city`` and has stored, not committed, the
    active fact city = "Lyon"; it commits when the block ends."""
    with connect(app_url) as holder:
        holder.execute("BEGIN")
        set_scope(holder, project_id)
        lock_scopes(holder, project_id, {"alice"}, {("alice", "city")})
        holder.execute(
            "INSERT INTO facts (project_id, subject_id, predicate, value, embedding) "
            "VALUES (%s, 'alice', 'city', '\"Lyon\"', %s)", (project_id, embedding))
        yield holder
        holder.execute("COMMIT")


def wait_until_blocked_by(holder: psycopg.Connection, observer_url: str,
                          thread: threading.Thread, what: str) -> None:
    """Return once some session waits for a lock that ``holder`` holds (PostgreSQL's own lock
    graph, ``pg_blocking_pids``); fail with ``what`` if ``thread`` ends first: it did not wait."""
    holder_pid = holder.info.backend_pid
    with psycopg.connect(observer_url, autocommit=True) as observer:

        def blocked() -> bool:
            row = observer.execute(
                "SELECT EXISTS (SELECT FROM pg_stat_activity "
                "WHERE %s = ANY (pg_blocking_pids(pid)))", (holder_pid,)).fetchone()
            assert row is not None
            assert row[0] or thread.is_alive(), what
            return bool(row[0])

        eventually(blocked, what)
