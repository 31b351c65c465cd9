"""Loads a synthetic data set into a database of its own, fast enough for a million facts.

One database per data set (``haki_bench_<name>``), migrated by the project's own migrations,
loaded as the owner. Secondary indexes (HNSW, GIN, scope btrees) are dropped before the bulk
``COPY`` and rebuilt from their exact migration definitions afterwards — building an HNSW graph
once is several times faster than inserting into it row by row — then the tables are
ANALYZEd; then the subjects big enough get their scope indexes (``haki.db.scope_indexes``, the
service's default policy), as the scheduled job gives them in production. The data set's
fingerprint is stored as the database comment, so ``--reuse`` keeps a database only when it
holds exactly the rows the spec describes.
"""

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime

import psycopg
from psycopg import sql
from tqdm import tqdm

from benchmarks.synthetic import EVENT_COLUMNS, FACT_COLUMNS, DatasetSpec, Generator
from haki.db import Role
from haki.db.connection import connect
from haki.db.migrate import apply_migrations
from haki.db.scope_indexes import ScopeIndexPolicy, reconcile_scope_indexes
from haki_local.embedded import embedded_role_url

log = logging.getLogger(__name__)

#: Index builds: the whole 1M-row HNSW graph fits in memory (a graph that spills is built far
#: more slowly), and the two cores are both used (leader + one worker).
BUILD_SETTINGS: dict[str, str] = {
    "maintenance_work_mem": "6GB",
    "max_parallel_maintenance_workers": "1",
}
_MARKER = "haki-bench "


@dataclass(frozen=True)
class LoadReport:
    database: str
    facts: int
    events: int
    reused: bool
    copy_s: float
    index_s: float
    analyze_s: float
    #: The scope indexes (haki.db.scope_indexes) the data set holds after loading, and the time
    #: spent building the ones this load added (0 when they were there already).
    scope_indexes: int = 0
    scope_indexes_s: float = 0.0

    @property
    def rows_per_s(self) -> float | None:
        return (self.facts + self.events) / self.copy_s if self.copy_s else None


def database_name(spec: DatasetSpec) -> str:
    return f"haki_bench_{spec.name}"


def ensure_dataset(
    superuser_url: str, spec: DatasetSpec, *, reuse: bool, now: datetime, progress: bool = True,
) -> LoadReport:
    """Make database ``haki_bench_<name>`` hold ``spec``'s rows; reload unless reusable."""
    name = database_name(spec)
    marker = _MARKER + spec.fingerprint()
    with psycopg.connect(superuser_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = %s",
            (name,),
        ).fetchone()
        reusable = reuse and row is not None and row[0] == marker
        if not reusable:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(name)))
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    owner_url = embedded_role_url(superuser_url, Role.OWNER, name)
    # A reused copy gets the migrations added since it was loaded: the schema matches the code.
    apply_migrations(owner_url)
    if reusable:
        log.info("reusing %s (%s facts)", name, spec.total_facts)
        return _with_scope_indexes(
            owner_url, LoadReport(name, spec.total_facts, spec.total_events, True, 0.0, 0.0, 0.0))
    with connect(owner_url) as conn:
        indexes = _drop_secondary_indexes(conn)
        started = time.perf_counter()
        generator = Generator(spec, now=now)
        _copy(conn, "events", EVENT_COLUMNS, generator.event_batches(),
              spec.total_events, progress)
        _copy(conn, "facts", FACT_COLUMNS, generator.fact_batches(),
              spec.total_facts, progress)
        copy_s = time.perf_counter() - started
        started = time.perf_counter()
        for setting, value in BUILD_SETTINGS.items():
            conn.execute("SELECT set_config(%s, %s, false)", (setting, value))
        for index_name, definition in indexes:
            log.info("building %s", index_name)
            conn.execute(definition)
        index_s = time.perf_counter() - started
        started = time.perf_counter()
        conn.execute("ANALYZE facts, events")
        analyze_s = time.perf_counter() - started
        conn.execute(sql.SQL("COMMENT ON DATABASE {} IS {}").format(
            sql.Identifier(name), sql.Literal(marker)))
    log.info("loaded %s: copy %.1fs, indexes %.1fs", name, copy_s, index_s)
    return _with_scope_indexes(owner_url, LoadReport(
        name, spec.total_facts, spec.total_events, False, copy_s, index_s, analyze_s))


def _with_scope_indexes(owner_url: str, report: LoadReport) -> LoadReport:
    """Give the data set the scope indexes the service's default policy wants, as the scheduled
    job would (a reused set keeps the ones it has)."""
    started = time.perf_counter()
    run = reconcile_scope_indexes(owner_url, ScopeIndexPolicy())
    built_s = time.perf_counter() - started if run.created else 0.0
    return replace(report, scope_indexes=len(run.created) + len(run.kept),
                   scope_indexes_s=built_s)


def _drop_secondary_indexes(conn: psycopg.Connection) -> list[tuple[str, str]]:
    """Drop every non-constraint index of facts and events; return (name, CREATE statement)."""
    indexes: list[tuple[str, str]] = conn.execute(
        """
        SELECT i.indexname, i.indexdef
        FROM pg_indexes AS i
        WHERE i.schemaname = 'public' AND i.tablename IN ('facts', 'events')
          AND NOT EXISTS (SELECT 1 FROM pg_constraint AS c WHERE c.conname = i.indexname)
        ORDER BY i.indexname
        """
    ).fetchall()
    for index_name, _ in indexes:
        conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(index_name)))
    return indexes


def _copy(
    conn: psycopg.Connection, table: str, columns: tuple[tuple[str, str], ...],
    batches: Iterable[list[tuple[object, ...]]], total: int, progress: bool,
) -> None:
    statement = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(
        sql.Identifier(table), sql.SQL(", ").join(sql.Identifier(c) for c, _ in columns))
    with (
        conn.transaction(),
        conn.cursor().copy(statement) as copy,
        tqdm(total=total, desc=f"COPY {table}", unit="row",
             disable=None if progress else True) as bar,  # None: only on a terminal
    ):
        copy.set_types([t for _, t in columns])
        for batch in batches:
            for row in batch:
                copy.write_row(row)
            bar.update(len(batch))


#: What the calls read besides the graphs, each page through shared buffers with the normal
#: strategy (a sequential scan of a table larger than a quarter of shared_buffers only
#: cycles a small ring of buffers, so each statement reads through an index):
#: - every row of facts and events through its scope index (``facts_scope_idx`` /
#:   ``events_scope_idx``, 0002: their leaf pages too), ``octet_length`` of a column no index
#:   holds making each row come from the heap;
#: - the primary keys (the TID and id look-ups), by index-only scans;
#: - the text indexes (0004, 0011), by one bitmap scan per table for every term the data set
#:   holds (``text_term_stats``), and the text statistics with their primary keys.
#: Each statement with whether it reads through a bitmap scan (a GIN index has no other).
_PREWARM: list[tuple[str, bool]] = [
    # Every row through the scope index, in its order (the primary key leads with project_id
    # too: the order names the index).
    *((f"SELECT count(octet_length(t.search_vector::text)) FROM (SELECT search_vector FROM "
       f"{table} ORDER BY {order}) AS t", False)
      for table, order in (("facts", "project_id, subject_id, status"),
                           ("events", "project_id, subject_id, occurred_at, seq"))),
    *((f"SELECT count(*) FROM {table} WHERE id >= '00000000-0000-0000-0000-000000000000'",
       False) for table in ("facts", "events")),
    *((f"SELECT count(*) FROM {table} WHERE search_vector @@ (SELECT tsquery_or_agg("
       "plainto_tsquery('simple', term)) FROM (SELECT DISTINCT term FROM text_term_stats) AS t)",
       True) for table in ("facts", "events")),
    *((f"SELECT count(*) FROM {table} WHERE project_id >= ''", False)
      for table in ("text_term_stats", "text_scope_stats")),
]


def prewarm(owner_url: str) -> float:
    """Bring a data set's rows, its B-tree and text indexes and its text statistics into
    shared buffers (``_PREWARM``; no ``pg_prewarm`` in the embedded build); seconds taken. A
    memory service's database runs for months, its working set in memory; a scenario of 1,000
    subjects would otherwise time mostly first reads of the subjects the warm-up did not ask
    about. The HNSW graphs are warmed by the warm-up's questions."""
    started = time.perf_counter()
    with connect(owner_url) as conn:
        conn.execute("SET enable_seqscan = off")
        conn.execute("SET max_parallel_workers_per_gather = 0")
        for statement, through_bitmap in _PREWARM:
            conn.execute("SET enable_bitmapscan = " + ("on" if through_bitmap else "off"))
            conn.execute(statement)
    return time.perf_counter() - started
