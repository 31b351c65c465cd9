"""Scope indexes: an HNSW graph and a text (GIN) index of its own for each big subject.

The tables' indexes hold every scope, and pgvector filters the scope after the graph search, so
a subject holding a few percent of a large table is slow to search through them. A subject
with at least ``min_rows`` rows and at most ``max_share`` of its table (the largest first, at
most ``max_scopes`` per table) gets partial indexes ``WHERE project_id = … AND subject_id = …``,
which the planner picks by itself; they are dropped below half of ``min_rows`` (hysteresis).
:func:`reconcile_scope_indexes` builds and drops them concurrently as the owner, under a
session advisory lock, from the per-scope counts the writes keep (``text_scope_stats``). Names
are a digest of the ids (no tenant id in a name, a log line or a metric); the predicates hold
the ids as literals, which only database roles can see. Why and the figures:
docs/decisions/2026-12-01-scope-indexes.md; operations: docs/scaling.md.
"""

import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

import psycopg
from psycopg import sql

from haki.db.connection import connect
from haki.settings import Settings

log = logging.getLogger(__name__)

Table = Literal["facts", "events"]
TABLES: tuple[Table, ...] = ("facts", "events")

#: A scope's own indexes on a table, by kind: what each is built on (the same graph parameters
#: as the tables' own graphs; the same text column as their GIN indexes).
Kind = Literal["hnsw", "gin"]
KINDS: dict[Kind, str] = {
    "hnsw": "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 128)",
    "gin": "USING gin (search_vector)",
}

#: ``text_scope_stats``'s count of a table's rows in a scope.
_ROWS_COLUMN: dict[Table, str] = {"facts": "fact_docs", "events": "event_docs"}

#: Session advisory lock of a run (another run at once returns at once): "haki" then "sc",
#: a key of its own (the migration runner holds another).
ADVISORY_LOCK_KEY = 0x6861_6B69_7363

#: Each scope's rows in a table and that table's total, over the scopes' statistics; only the
#: scopes that may hold indexes of their own (at least the keep floor, at most the share) come
#: back, the largest first.
CANDIDATE_SCOPES = """
SELECT project_id, subject_id, rows
FROM (
    SELECT project_id, subject_id, {rows} AS rows, sum({rows}) OVER () AS total
    FROM text_scope_stats
) AS scopes
WHERE rows >= %(keep_rows)s AND rows <= %(max_share)s * total
ORDER BY rows DESC, project_id, subject_id
"""

#: The scope indexes that exist, valid or not (an interrupted concurrent build leaves an
#: invalid one behind): exactly the names :func:`index_name` makes (``facts_scope_idx``, the
#: table's own scope btree, must never match).
EXISTING_INDEXES = """
SELECT c.relname AS name, i.indisvalid AS valid
FROM pg_index AS i
JOIN pg_class AS c ON c.oid = i.indexrelid
JOIN pg_class AS t ON t.oid = i.indrelid
WHERE c.relnamespace = 'public'::regnamespace AND t.relname IN ('facts', 'events')
  AND c.relname ~ ('^' || t.relname || '_scope_(hnsw|gin)_[0-9a-f]{20}$')
"""

CREATE_INDEX = """
CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON {table} {method}
WHERE project_id = {project_id} AND subject_id = {subject_id}
"""

DROP_INDEX = "DROP INDEX CONCURRENTLY IF EXISTS {name}"


@lru_cache(maxsize=1024)
def _scope_digest(project_id: str, subject_id: str) -> str:
    """20 hex digits of sha256(project, subject), a NUL byte (which no id holds) between
    them; one per scope, whatever the table or kind (a context call asks for two names)."""
    return hashlib.sha256(f"{project_id}\0{subject_id}".encode()).hexdigest()[:20]


def index_name(table: Table, kind: Kind, project_id: str, subject_id: str) -> str:
    """The name of (project, subject)'s own ``kind`` index on ``table``: a digest, never the
    ids."""
    return f"{table}_scope_{kind}_{_scope_digest(project_id, subject_id)}"


def graph_name(table: Table, project_id: str, subject_id: str) -> str:
    """The scope graph's name: what the planner settings look up to size the search."""
    return index_name(table, "hnsw", project_id, subject_id)


@dataclass(frozen=True)
class ScopeIndexPolicy:
    """Which scopes get indexes of their own (module docstring)."""

    # The defaults are the settings' (one source: HAKI_SCOPE_INDEX*).
    min_rows: int = Settings.model_fields["scope_index_min_rows"].default
    max_share: float = Settings.model_fields["scope_index_max_share"].default
    max_scopes: int = Settings.model_fields["scope_indexes_max"].default
    #: The builds' ``maintenance_work_mem``: a graph that does not fit is built much slower
    #: (pgvector warns); 50,000 rows of 384 dimensions take ~100 MB.
    maintenance_work_mem: str = "512MB"
    #: How long a build or a drop may wait for a lock — a concurrent build also waits for the
    #: transactions older than it — before it fails (and the run goes on with the next one),
    #: so that a long transaction never holds the task until its function times out.
    lock_timeout: str = "60s"

    def __post_init__(self) -> None:
        if self.min_rows < 2 or not 0 < self.max_share <= 1 or self.max_scopes < 0:
            raise ValueError("scope indexes need min_rows >= 2, 0 < max_share <= 1, "
                             "max_scopes >= 0")

    @classmethod
    def from_settings(cls, settings: Settings) -> "ScopeIndexPolicy":
        return cls(min_rows=settings.scope_index_min_rows,
                   max_share=settings.scope_index_max_share,
                   max_scopes=settings.scope_indexes_max)

    @property
    def keep_rows(self) -> int:
        return self.min_rows // 2


@dataclass(frozen=True)
class WantedIndex:
    table: Table
    kind: Kind
    project_id: str
    subject_id: str
    rows: int

    @property
    def name(self) -> str:
        return index_name(self.table, self.kind, self.project_id, self.subject_id)


@dataclass
class ScopeIndexRun:
    """What a run did: index names (digests) only."""

    created: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    #: Wanted, but not built: the run's deadline came first (the next run builds them).
    deferred: list[str] = field(default_factory=list)
    #: A build or drop that failed (logged; a failed build may leave an invalid index, which
    #: the next run drops and builds again).
    failed: list[str] = field(default_factory=list)
    #: False: another run held the lock, this one did nothing.
    ran: bool = True


def wanted_indexes(conn: psycopg.Connection, policy: ScopeIndexPolicy,
                   existing: set[str]) -> list[WantedIndex]:
    """The indexes the policy wants now, per table the largest scopes first: a scope new to
    them needs ``min_rows``, one that has one keeps them down to ``keep_rows``."""
    wanted: list[WantedIndex] = []
    for table in TABLES:
        rows = conn.execute(
            sql.SQL(CANDIDATE_SCOPES).format(rows=sql.Identifier(_ROWS_COLUMN[table])),
            {"keep_rows": policy.keep_rows, "max_share": policy.max_share}).fetchall()
        scopes = [[WantedIndex(table, kind, project, subject, int(count)) for kind in KINDS]
                  for project, subject, count in rows]
        scopes = [own for own in scopes
                  if own[0].rows >= policy.min_rows or {i.name for i in own} & existing]
        wanted.extend(index for own in scopes[:policy.max_scopes] for index in own)
    return wanted


def reconcile_scope_indexes(
    conninfo: str, policy: ScopeIndexPolicy | None = None, *, dry_run: bool = False,
    deadline: float | None = None, progress: Callable[[str], None] | None = None,
) -> ScopeIndexRun:
    """Build the scope indexes the policy wants, drop the others (module docstring).

    ``conninfo``: the tables' owner. ``deadline``: a ``time.monotonic()`` after which no new
    build starts (a build under way finishes). ``dry_run``: say what would change, change
    nothing. ``progress`` is told each step, by index name."""
    policy = policy or ScopeIndexPolicy()
    say = progress or (lambda _message: None)
    run = ScopeIndexRun()
    with connect(conninfo) as conn:
        locked = conn.execute("SELECT pg_try_advisory_lock(%s)", (ADVISORY_LOCK_KEY,)).fetchone()
        if not (locked and locked[0]):
            log.info("scope indexes: another run holds the lock; nothing done")
            return ScopeIndexRun(ran=False)
        try:
            conn.execute("SELECT set_config('maintenance_work_mem', %s, false), "
                         "set_config('lock_timeout', %s, false)",
                         (policy.maintenance_work_mem, policy.lock_timeout))
            existing = {row[0]: row[1] for row in conn.execute(EXISTING_INDEXES)}
            wanted = wanted_indexes(conn, policy, set(existing))
            wanted_names = {index.name for index in wanted}
            for name, valid in sorted(existing.items()):
                if name in wanted_names and valid:
                    run.kept.append(name)
                    continue
                say(f"drop {name}" + ("" if valid else " (invalid: an interrupted build)"))
                if dry_run or _run_ddl(conn, sql.SQL(DROP_INDEX).format(
                        name=sql.Identifier(name)), name, run):
                    run.dropped.append(name)
            for index in wanted:
                if index.name in run.kept:
                    continue
                if deadline is not None and time.monotonic() > deadline:
                    run.deferred.append(index.name)
                    continue
                say(f"build {index.name} ({index.table}, {index.rows:,} rows)")
                started = time.monotonic()
                if dry_run:
                    run.created.append(index.name)
                elif _run_ddl(conn, sql.SQL(CREATE_INDEX).format(
                        name=sql.Identifier(index.name), table=sql.Identifier(index.table),
                        method=sql.SQL(KINDS[index.kind]),
                        project_id=sql.Literal(index.project_id),
                        subject_id=sql.Literal(index.subject_id)), index.name, run):
                    log.info("scope index %s built on %s: %d rows in %.1f s", index.name,
                             index.table, index.rows, time.monotonic() - started)
                    run.created.append(index.name)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (ADVISORY_LOCK_KEY,))
    log.info("scope indexes: %d built, %d dropped, %d kept, %d deferred, %d failed",
             len(run.created), len(run.dropped), len(run.kept), len(run.deferred),
             len(run.failed))
    return run


def _run_ddl(conn: psycopg.Connection, statement: sql.Composed, name: str,
             run: ScopeIndexRun) -> bool:
    """One build or drop; a database error is logged (the index's name and the error's
    SQLSTATE and message, which name no tenant) and counted, and the run goes on."""
    try:
        conn.execute(statement)
    except psycopg.Error as exc:
        log.error("scope index %s: %s %s", name, exc.sqlstate, exc.diag.message_primary)
        run.failed.append(name)
        return False
    return True
