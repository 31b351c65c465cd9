"""Seeding helpers for the assembler tests: rows with chosen embeddings and attributes,
written as the owner so a test controls every column the rules look at."""

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import psycopg
import pytest

from haki.assembler import DEFAULT_CONFIG, Assembly, QueryVector, RetrievalConfig, assemble
from haki.db import Database
from haki.models import ContextRequest

NOW = datetime.now(UTC)


def unit_vector(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
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
        return assemble(request, QueryVector(vector), db=self.db, config=config)


@pytest.fixture
def ask(app_db: Database, project_id: str) -> Asker:
    return Asker(app_db, project_id)


def trace_rows(conn: psycopg.Connection, trace_id: uuid.UUID) -> list[dict[str, Any]]:
    cursor = conn.cursor(row_factory=psycopg.rows.dict_row)
    return cursor.execute(
        "SELECT * FROM context_traces WHERE trace_id = %s ORDER BY ordinal", (trace_id,)
    ).fetchall()
