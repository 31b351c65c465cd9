"""Scope graphs: a partial HNSW index of its own for each big subject (issue 13, item 5).

Why. The tables' own graphs (``facts_embedding_hnsw``, ``events_embedding_hnsw``) hold every
scope. pgvector filters the scope *after* the graph search, so for a subject holding 5 % of a
1M-row table the iterative scan walks the graph until 128 of its rows pass the filter: ~46 ms
for the facts, and the subject's 10,000 events were scanned exactly (~28 ms). A subject small
enough is scanned exactly through the scope index, and one that is most of its table passes
the filter anyway; the ones in between get a graph of their own here, as pgvector's README
advises for frequently filtered values: ``CREATE INDEX … USING hnsw … WHERE project_id = … AND
subject_id = …``. The planner picks it by itself for a statement on that scope (statements are
never prepared, so each is planned with its values, and the predicate is proved from them);
the planner settings (``sql._planner_settings``) size the search breadth by the scope graph's
rows instead of the table's. Measured on the benchmark's hard subject (60 questions, ms p50):
facts 46 → 6 (recall of the 128 nearest 0.992), events 28 → 8 (0.975).

Which scopes. From ``text_scope_stats`` (active facts and events per scope, kept on write):
a scope gets a graph when it holds at least ``min_rows`` rows of a table and at most
``max_share`` of that table's rows, the largest first, at most ``max_graphs`` per table. A
graph is kept until its scope falls below half of ``min_rows`` (hysteresis: a scope near the
line is not rebuilt back and forth), outgrows ``max_share`` or leaves the largest
``max_graphs``.

How. :func:`reconcile_scope_graphs` runs as the tables' owner on a connection of its own, in
autocommit: ``CREATE INDEX CONCURRENTLY`` (writes go on during the build) and ``DROP INDEX
CONCURRENTLY``. A build that failed or was cut off leaves an invalid index, which the next
run drops and builds again. A session advisory lock makes a second run at once a no-op. The
scheduled job (``functions/migrate``, event ``{"task": "scope_graphs"}``) and ``haki
scope-graphs`` call it.

Names. ``<table>_scope_hnsw_<20 hex digits of sha256(project, subject)>``: no tenant id in a
name, a log line or a metric. The predicate itself holds the two ids (as quoted literals,
composed by ``psycopg.sql``): the catalog (``pg_indexes``) shows them to database roles, as it
shows any index definition; tenants have no database role.

Cost. Each write to such a scope updates two graphs; each graph takes memory and disk like its
rows' share of the table's graph (the hard subject's 50,000 facts: 98 MiB, built in 18 s here).
"""

import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import psycopg
from psycopg import sql

from haki.settings import Settings

log = logging.getLogger(__name__)

Table = Literal["facts", "events"]
TABLES: tuple[Table, ...] = ("facts", "events")

#: ``text_scope_stats``'s count of a table's rows in a scope.
_ROWS_COLUMN: dict[Table, str] = {"facts": "fact_docs", "events": "event_docs"}

#: Session advisory lock of a run (another run at once returns at once).
ADVISORY_LOCK_KEY = 0x6861_6B69_0016  # "haki" + migration 0016

#: Each scope's rows in a table and that table's total, over the scopes' statistics; only the
#: scopes that may hold a graph (at least the keep floor, at most the share) come back, the
#: largest first.
CANDIDATE_SCOPES = """
SELECT project_id, subject_id, rows
FROM (
    SELECT project_id, subject_id, {rows} AS rows, sum({rows}) OVER () AS total
    FROM text_scope_stats
) AS scopes
WHERE rows >= %(keep_rows)s AND rows <= %(max_share)s * total
ORDER BY rows DESC, project_id, subject_id
"""

#: The scope graphs that exist, valid or not (an interrupted concurrent build leaves an
#: invalid one behind), with the rows each holds.
EXISTING_GRAPHS = """
SELECT c.relname AS name, i.indisvalid AS valid, t.relname AS table_name, c.reltuples
FROM pg_index AS i
JOIN pg_class AS c ON c.oid = i.indexrelid
JOIN pg_class AS t ON t.oid = i.indrelid
WHERE c.relnamespace = 'public'::regnamespace AND t.relname IN ('facts', 'events')
  AND c.relname LIKE t.relname || '\\_scope\\_hnsw\\_%%'
"""

#: The same graph parameters as the tables' own graphs (migration 0002).
CREATE_GRAPH = """
CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON {table}
USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 128)
WHERE project_id = {project_id} AND subject_id = {subject_id}
"""

DROP_GRAPH = "DROP INDEX CONCURRENTLY IF EXISTS {name}"


def graph_name(table: Table, project_id: str, subject_id: str) -> str:
    """The name of the scope graph of (project, subject) on ``table``: a digest, never the ids
    (a NUL byte, which no id holds, separates them)."""
    digest = hashlib.sha256(f"{project_id}\0{subject_id}".encode()).hexdigest()[:20]
    return f"{table}_scope_hnsw_{digest}"


@dataclass(frozen=True)
class ScopeGraphPolicy:
    """Which scopes get a graph of their own (module docstring)."""

    min_rows: int = 10_000
    max_share: float = 0.5
    max_graphs: int = 32
    #: The builds' ``maintenance_work_mem``: a graph that does not fit is built much slower
    #: (pgvector warns); 50,000 rows of 384 dimensions take ~100 MB.
    maintenance_work_mem: str = "512MB"

    def __post_init__(self) -> None:
        if self.min_rows < 2 or not 0 < self.max_share <= 1 or self.max_graphs < 0:
            raise ValueError("scope graphs need min_rows >= 2, 0 < max_share <= 1, "
                             "max_graphs >= 0")

    @classmethod
    def from_settings(cls, settings: Settings) -> "ScopeGraphPolicy":
        return cls(min_rows=settings.scope_graph_min_rows,
                   max_share=settings.scope_graph_max_share,
                   max_graphs=settings.scope_graphs_max)

    @property
    def keep_rows(self) -> int:
        return self.min_rows // 2


@dataclass(frozen=True)
class WantedGraph:
    table: Table
    project_id: str
    subject_id: str
    rows: int

    @property
    def name(self) -> str:
        return graph_name(self.table, self.project_id, self.subject_id)


@dataclass
class ScopeGraphRun:
    """What a run did: graph names (digests) only."""

    created: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    #: Wanted, but not built: the run's deadline came first (the next run builds them).
    deferred: list[str] = field(default_factory=list)
    #: False: another run held the lock, this one did nothing.
    ran: bool = True


def wanted_graphs(conn: psycopg.Connection, policy: ScopeGraphPolicy,
                  existing: set[str]) -> list[WantedGraph]:
    """The graphs the policy wants now, per table the largest first: a scope new to a graph
    needs ``min_rows``, one that has a graph keeps it down to ``keep_rows``."""
    wanted: list[WantedGraph] = []
    for table in TABLES:
        rows = conn.execute(
            sql.SQL(CANDIDATE_SCOPES).format(rows=sql.Identifier(_ROWS_COLUMN[table])),
            {"keep_rows": policy.keep_rows, "max_share": policy.max_share}).fetchall()
        eligible = [WantedGraph(table, project, subject, int(count))
                    for project, subject, count in rows]
        eligible = [g for g in eligible if g.rows >= policy.min_rows or g.name in existing]
        wanted.extend(eligible[:policy.max_graphs])
    return wanted


def reconcile_scope_graphs(
    conninfo: str, policy: ScopeGraphPolicy | None = None, *, dry_run: bool = False,
    deadline: float | None = None, progress: Callable[[str], None] | None = None,
) -> ScopeGraphRun:
    """Build the scope graphs the policy wants, drop the others (module docstring).

    ``conninfo``: the tables' owner. ``deadline``: a ``time.monotonic()`` after which no new
    build starts (a build under way finishes). ``dry_run``: say what would change, change
    nothing. ``progress`` is told each step, by graph name."""
    policy = policy or ScopeGraphPolicy()
    say = progress or (lambda _message: None)
    run = ScopeGraphRun()
    with psycopg.connect(conninfo, autocommit=True, prepare_threshold=None) as conn:
        if not conn.execute("SELECT pg_try_advisory_lock(%s)", (ADVISORY_LOCK_KEY,)).fetchone()[0]:
            log.info("scope graphs: another run holds the lock; nothing done")
            return ScopeGraphRun(ran=False)
        try:
            conn.execute("SELECT set_config('maintenance_work_mem', %s, false)",
                         (policy.maintenance_work_mem,))
            existing = {row[0]: row[1] for row in conn.execute(EXISTING_GRAPHS)}
            wanted = wanted_graphs(conn, policy, set(existing))
            wanted_names = {g.name for g in wanted}
            for name, valid in sorted(existing.items()):
                if name in wanted_names and valid:
                    run.kept.append(name)
                    continue
                say(f"drop {name}" + ("" if valid else " (invalid: an interrupted build)"))
                if not dry_run:
                    conn.execute(sql.SQL(DROP_GRAPH).format(name=sql.Identifier(name)))
                run.dropped.append(name)
            for graph in wanted:
                if graph.name in run.kept:
                    continue
                if deadline is not None and time.monotonic() > deadline:
                    run.deferred.append(graph.name)
                    continue
                say(f"build {graph.name} ({graph.table}, {graph.rows:,} rows)")
                started = time.monotonic()
                if not dry_run:
                    conn.execute(sql.SQL(CREATE_GRAPH).format(
                        name=sql.Identifier(graph.name), table=sql.Identifier(graph.table),
                        project_id=sql.Literal(graph.project_id),
                        subject_id=sql.Literal(graph.subject_id)))
                    log.info("scope graph %s built on %s: %d rows in %.1f s", graph.name,
                             graph.table, graph.rows, time.monotonic() - started)
                run.created.append(graph.name)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (ADVISORY_LOCK_KEY,))
    log.info("scope graphs: %d built, %d dropped, %d kept, %d deferred", len(run.created),
             len(run.dropped), len(run.kept), len(run.deferred))
    return run
