"""A scratch tenant for the small benchmarks: one project on a scratch database of the
benchmark server, filled by the caller's seed, with the owner's and the runtime role's handles
and a key of the project to act for."""

import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import LiteralString, TypeVar

import numpy as np
import psycopg

from benchmarks.server import start_bench_server
from haki.db import Database, Role
from haki_local.admin import tenant_keys
from haki_local.evaluation import scratch_database

T = TypeVar("T")


@dataclass(frozen=True)
class Tenant:
    urls: dict[Role, str]
    project: str
    owner_db: Database
    app_db: Database
    #: The hash of a key of ``project`` (``acting_for``).
    key: str


@contextmanager
def scratch_tenant(label: str, seed: Callable[[str, str], T]) -> Iterator[tuple[Tenant, T]]:
    """A new project named after ``label``, filled by ``seed(owner_url, project)`` before its
    key is made; the tenant and what ``seed`` returned. The database goes when the block ends."""
    with scratch_database(start_bench_server()) as urls:
        project = f"{label}-{uuid.uuid4().hex[:6]}"
        seeded = seed(urls[Role.OWNER], project)
        owner_db, app_db = Database(urls[Role.OWNER]), Database(urls[Role.APP])
        try:
            key = tenant_keys(owner_db, [project], org_id="bench", label=label)[project]
            yield Tenant(urls, project, owner_db, app_db, key), seeded
        finally:
            owner_db.close()
            app_db.close()


def copy_rows(conn: psycopg.Connection, statement: LiteralString,
              rows: Iterable[Sequence[object]]) -> None:
    """``rows`` through ``statement``, a ``COPY … FROM STDIN``."""
    with conn.cursor().copy(statement) as copy:
        for row in rows:
            copy.write_row(row)


def unit_vector_text(v: np.ndarray) -> str:
    """``v`` scaled to unit length, as pgvector's text input (5 decimals)."""
    return "[" + ",".join(f"{x:.5f}" for x in v / np.linalg.norm(v)) + "]"
