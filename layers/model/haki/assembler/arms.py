"""The fused ranking's candidates: its three statements and the merge of their rows.

Each statement is a call of the SQL function that holds it (migrations/functions/):
``haki_text_arm`` (the idf text arm with the turns around its episodes), ``haki_nearest_facts``
and ``haki_nearest_events`` (the vector arm, each over its own HNSW graph, the events with the
turns around the nearest few); a request's ``thread_id`` narrows the episodes, and every event
row carries its thread and its place in the written order (``seq``). A function keeps its
statement's parse tree, and its plan where one can be reused, for the life of the connection;
statements are never prepared, which would pin a client to one backend behind RDS Proxy. Each
call below takes exactly the parameters its function declares, built from the request and the
configuration; each sends its statement and returns the cursor, whose rows the caller fetches
when it needs them (in a pipeline, a fetch is a round trip). Fetched rows are read, never
changed.
"""

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal
from uuid import UUID

import numpy as np
import psycopg
from psycopg.rows import DictRow, dict_row

from haki.assembler.candidates import EpisodeCandidate, FactCandidate
from haki.assembler.config import RetrievalConfig
from haki.assembler.fusion import ArmHit, NeighbourLink
from haki.db.scope_indexes import graph_name
from haki.models import ContextRequest

_DAY_SECONDS = 86_400.0

TEXT_ARM = """
SELECT * FROM haki_text_arm(
    p_project_id => %(project_id)s, p_subject_id => %(subject_id)s, p_query => %(query)s,
    p_stopwords => %(stopwords)s, p_max_terms => %(max_terms)s,
    p_use_text_arm => %(use_text_arm)s, p_use_episodes => %(use_episodes)s,
    p_text_candidates => %(text_candidates)s, p_text_top_k => %(text_top_k)s,
    p_horizon_slow_seconds => %(horizon_slow_seconds)s,
    p_horizon_volatile_seconds => %(horizon_volatile_seconds)s,
    p_horizon_ephemeral_seconds => %(horizon_ephemeral_seconds)s,
    p_excerpt_chars => %(excerpt_chars)s, p_neighbour_span => %(neighbour_span)s,
    p_use_neighbours => %(use_neighbours)s, p_thread_id => %(thread_id)s)
"""

NEAREST_FACTS = """
SELECT * FROM haki_nearest_facts(
    p_project_id => %(project_id)s, p_subject_id => %(subject_id)s,
    p_query_vector => %(query_vector)s, p_vector_top_k => %(depth)s,
    p_scan_rows => %(scan_rows)s, p_use_vector_arm => %(use_vector_arm)s,
    p_facts_graph => %(graph)s,
    p_ef_search_min => %(ef_search_min)s, p_ef_search_max => %(ef_search_max)s,
    p_rows_per_ef => %(rows_per_ef)s, p_max_scan_tuples => %(max_scan_tuples)s,
    p_horizon_slow_seconds => %(horizon_slow_seconds)s,
    p_horizon_volatile_seconds => %(horizon_volatile_seconds)s,
    p_horizon_ephemeral_seconds => %(horizon_ephemeral_seconds)s)
"""

NEAREST_EVENTS = """
SELECT * FROM haki_nearest_events(
    p_project_id => %(project_id)s, p_subject_id => %(subject_id)s,
    p_query_vector => %(query_vector)s, p_vector_top_k => %(depth)s,
    p_scan_rows => %(scan_rows)s, p_use_vector_arm => %(use_vector_arm)s,
    p_use_episodes => %(use_episodes)s, p_events_graph => %(graph)s,
    p_ef_search_min => %(ef_search_min)s, p_ef_search_max => %(ef_search_max)s,
    p_rows_per_ef => %(rows_per_ef)s, p_max_scan_tuples => %(max_scan_tuples)s,
    p_neighbour_sources => %(neighbour_sources)s, p_excerpt_chars => %(excerpt_chars)s,
    p_neighbour_span => %(neighbour_span)s, p_use_neighbours => %(use_neighbours)s,
    p_thread_id => %(thread_id)s)
"""

SUBJECT_DISABLED = """
SELECT haki_subject_disabled(%(project_id)s, %(subject_id)s)
"""

Rows = list[DictRow]
Cursor = psycopg.Cursor[DictRow]


def _horizons(config: RetrievalConfig) -> dict[str, float]:
    return {
        "horizon_slow_seconds": config.volatility_horizon_slow_days * _DAY_SECONDS,
        "horizon_volatile_seconds": config.volatility_horizon_volatile_days * _DAY_SECONDS,
        "horizon_ephemeral_seconds": config.volatility_horizon_ephemeral_days * _DAY_SECONDS,
    }


def _search(config: RetrievalConfig, request: ContextRequest, table: Literal["facts", "events"],
            vector: np.ndarray) -> dict[str, Any]:
    """What both vector arms take: the vector, the call's depth, how many rows the graph
    search reads at least when the scope is a slice of the graph, and the breadth of the
    graph searched (the subject's own graph when it has one)."""
    return {
        "project_id": request.project, "subject_id": request.subject_id,
        "query_vector": vector, "depth": config.vector_depth(request.budget_tokens),
        "scan_rows": config.vector_scan_rows,
        "use_vector_arm": config.use_vector_arm,
        "graph": f"public.{graph_name(table, request.project, request.subject_id)}",
        "ef_search_min": config.hnsw_ef_search_min,
        "ef_search_max": config.hnsw_ef_search_max,
        "rows_per_ef": config.hnsw_rows_per_ef,
        "max_scan_tuples": str(config.hnsw_max_scan_tuples),
    }


def _cursor(conn: psycopg.Connection) -> Cursor:
    # Binary rows: embeddings decode straight into numpy.
    return conn.cursor(row_factory=dict_row, binary=True)


def text_arm(conn: psycopg.Connection, request: ContextRequest,
             config: RetrievalConfig) -> Cursor:
    """Send the text arm: its rows, with the turns around its episodes (``item``
    'neighbour'), each with its stored embedding. It needs no query vector, so it can run
    while the question is embedded. A request's ``thread_id`` narrows its episodes to that
    thread."""
    return _cursor(conn).execute(TEXT_ARM, {
        "project_id": request.project, "subject_id": request.subject_id,
        "query": request.query, "stopwords": config.stopword_list,
        "max_terms": config.max_query_terms, "use_text_arm": config.use_text_arm,
        "use_episodes": config.use_episodes, "text_candidates": config.text_candidates,
        "text_top_k": config.text_top_k, "excerpt_chars": config.excerpt_chars,
        "neighbour_span": config.neighbour_span, "use_neighbours": config.use_neighbours,
        "thread_id": request.thread_id, **_horizons(config),
    })


def nearest_facts(conn: psycopg.Connection, request: ContextRequest, config: RetrievalConfig,
                  vector: np.ndarray) -> Cursor:
    """Send the vector arm over facts: the nearest active facts of the scope, with their
    distance."""
    return _cursor(conn).execute(NEAREST_FACTS, {
        **_search(config, request, "facts", vector), **_horizons(config)})


def nearest_events(conn: psycopg.Connection, request: ContextRequest, config: RetrievalConfig,
                   vector: np.ndarray) -> Cursor:
    """Send the vector arm over events: the nearest events of the scope (of the request's
    thread, when it names one), with the turns around the nearest few."""
    return _cursor(conn).execute(NEAREST_EVENTS, {
        **_search(config, request, "events", vector),
        "use_episodes": config.use_episodes, "neighbour_sources": config.neighbour_sources,
        "excerpt_chars": config.excerpt_chars, "neighbour_span": config.neighbour_span,
        "use_neighbours": config.use_neighbours, "thread_id": request.thread_id})


def subject_disabled(conn: psycopg.Connection, request: ContextRequest) -> bool:
    """Whether the subject is disabled (``POST /v1/forget``): every arm then returned nothing
    of it. Asked only of a call that found no candidate, so it costs the others nothing."""
    row = conn.execute(SUBJECT_DISABLED, {"project_id": request.project,
                                          "subject_id": request.subject_id}).fetchone()
    return bool(row and row[0])


@dataclass(frozen=True)
class Neighbourhood:
    """The neighbouring turns of every episode that can be a neighbour source: ``rows``
    (``item`` 'neighbour'; the text arm's bring their embedding, the nearest events' their
    distance) and the query vector (float64)."""

    rows: list[DictRow]
    query: np.ndarray

    def links(self, source_ids: Sequence[UUID], candidate_ids: set[UUID]) -> list[NeighbourLink]:
        """The links of ``source_ids``, the best source first, each source's turns in order
        (a source whose turns both statements brought, once); a neighbour among
        ``candidate_ids`` by id only, any other with its row."""
        order = {source: position for position, source in enumerate(source_ids)}
        turns: dict[tuple[UUID, int], DictRow] = {}
        for row in self.rows:
            if row["source_id"] in order:
                turns.setdefault((row["source_id"], row["step"]), row)
        return [NeighbourLink(
            source_id=source, offset=step, neighbour_id=row["id"],
            episode=None if row["id"] in candidate_ids else self._episode(row))
            for (source, step), row in sorted(
                turns.items(), key=lambda turn: (order[turn[0][0]], turn[0][1]))]

    def _episode(self, row: DictRow) -> EpisodeCandidate:
        distance = row.get("distance")
        if distance is None:  # a text-arm row: from its stored embedding
            distance = cosine_distance(self.query, row["embedding"].to_numpy())
        return EpisodeCandidate.from_row(row, distance=distance)


@dataclass(frozen=True)
class Candidates:
    """Every row either arm returned, once, with its arm ranks; and the turns around the
    episodes that can be the fusion's neighbour sources."""

    hits: list[ArmHit]
    neighbourhood: Neighbourhood


def merge(facts: Rows, events: Rows, text: Rows, vector: np.ndarray,
          depth: int) -> Candidates:
    """The nearest facts and events merged by distance (ties by id), the best ``depth``
    ranked; then the text arm's rows, joined by (item, id). A text-arm row the vector arm did
    not return gets its distance here, from its stored embedding (cosine distance in float64,
    as pgvector's ``<=>`` computes it to ~1e-7)."""
    query = np.asarray(vector, dtype=np.float64)
    nearest = [row for row in events if row["item"] == "event"]
    neighbourhood = Neighbourhood(
        rows=[row for row in text + events if row["item"] == "neighbour"], query=query)
    merged = sorted(facts + nearest, key=lambda row: (row["distance"], row["id"]))[:depth]
    hits = {(row["item"], row["id"]): ArmHit(_candidate(row), rank, None)
            for rank, row in enumerate(merged, start=1)}
    for row in text:
        if row["item"] == "neighbour":
            continue
        key = (row["item"], row["id"])
        found = hits.get(key)
        if found is None:
            distance = cosine_distance(query, row["embedding"].to_numpy())
            hits[key] = ArmHit(_candidate(row, distance), None, row["text_arm_rank"])
        else:
            item = found.item
            if isinstance(item, FactCandidate):
                item = replace(item, text_rank=row["text_rank"])
            hits[key] = ArmHit(item, found.vector_rank, row["text_arm_rank"])
    return Candidates(list(hits.values()), neighbourhood)


def _candidate(row: DictRow, distance: float | None = None
               ) -> FactCandidate | EpisodeCandidate:
    """The candidate of an arm's row; ``distance`` where the row does not carry it."""
    return (FactCandidate.from_row(row, distance=distance) if row["item"] == "fact"
            else EpisodeCandidate.from_row(row, distance=distance))


def cosine_distance(query: np.ndarray, embedding: np.ndarray) -> float:
    """``1 - cos(query, embedding)``, as pgvector's ``<=>`` (float64 here)."""
    stored = np.asarray(embedding, dtype=np.float64)
    norms = float(np.sqrt(np.dot(query, query) * np.dot(stored, stored)))
    if norms == 0.0:
        return float("nan")  # pgvector's answer for a zero vector
    return 1.0 - max(-1.0, min(1.0, float(np.dot(query, stored)) / norms))
