"""Runs the assembler's SQL and turns rows into candidates. All I/O of the assembler is here
and in ``trace.py``."""

from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any
from uuid import UUID

import numpy as np
import psycopg
from psycopg.rows import dict_row

from haki.assembler import routines, sql
from haki.assembler.candidates import EpisodeCandidate, FactCandidate
from haki.assembler.config import RetrievalConfig
from haki.assembler.fusion import ArmHit, NeighbourLink
from haki.db import Database
from haki.db.scope_indexes import graph_name
from haki.models import ContextRequest

_DAY_SECONDS = 86_400.0


@dataclass(frozen=True)
class Retrieved:
    facts: list[FactCandidate]
    episodes: list[EpisodeCandidate]


@lru_cache(maxsize=4)
def _stopword_list(stopwords: frozenset[str]) -> list[str]:
    """The stop words as the array parameter, built once per configuration, not per call."""
    return sorted(stopwords)


def query_parameters(
    request: ContextRequest, query_vector: np.ndarray | None, config: RetrievalConfig
) -> dict[str, Any]:
    """The named parameters shared by the assembler's statements."""
    return {
        "project_id": request.project_id,
        "subject_id": request.subject_id,
        "query": request.query,
        "query_vector": query_vector,
        "stopwords": _stopword_list(config.stopwords),
        "max_terms": config.max_query_terms,
        "text_rank_cap": config.text_rank_cap,
        "top_k": config.top_k,
        "candidate_limit": config.candidate_limit,
        "episode_top_k": config.episode_top_k,
        "w_similarity": config.weight_similarity,
        "w_text": config.weight_text,
        "w_recency": config.weight_recency if config.use_recency else 0.0,
        "recency_tau_seconds": config.recency_tau_days * _DAY_SECONDS,
        "horizon_slow_seconds": config.volatility_horizon_slow_days * _DAY_SECONDS,
        "horizon_volatile_seconds": config.volatility_horizon_volatile_days * _DAY_SECONDS,
        "horizon_ephemeral_seconds": config.volatility_horizon_ephemeral_days * _DAY_SECONDS,
        "use_vector_arm": config.use_vector_arm,
        "use_text_arm": config.use_text_arm,
        "use_episodes": config.use_episodes,
        # The subject's own graphs, if it has them (haki.db.scope_indexes), size the breadth.
        "facts_graph": f"public.{graph_name('facts', request.project_id, request.subject_id)}",
        "events_graph": f"public.{graph_name('events', request.project_id, request.subject_id)}",
        "ef_search_min": config.hnsw_ef_search_min,
        "ef_search_max": config.hnsw_ef_search_max,
        "rows_per_ef": config.hnsw_rows_per_ef,
        "max_scan_tuples": str(config.hnsw_max_scan_tuples),
        "vector_top_k": config.vector_depth(request.budget_tokens),
        "text_top_k": config.text_top_k,
        "text_candidates": config.text_candidates,
        "excerpt_chars": config.excerpt_chars,
        "use_neighbours": config.use_neighbours,
        "neighbour_span": config.neighbour_span,
        "neighbour_sources": config.neighbour_sources,
    }


def retrieve(
    conn: psycopg.Connection, params: dict[str, Any], config: RetrievalConfig
) -> Retrieved:
    """Seed: fact candidates (the configured strategy's statement) and the nearest episodes,
    in one round trip: ``conn`` is in a pipelined transaction, so they leave with BEGIN and
    the scope and the first fetch waits for all of them (a nested pipeline would sync
    first)."""
    conn.execute(sql.PLANNER_SETTINGS, params)
    facts = conn.cursor(row_factory=dict_row).execute(
        sql.FACT_CANDIDATES[config.fact_candidates], params)
    episodes = conn.cursor(row_factory=dict_row).execute(sql.EPISODE_CANDIDATES, params)
    return Retrieved(
        facts=[FactCandidate.from_row(r) for r in facts.fetchall()],
        episodes=[EpisodeCandidate.from_row(r) for r in episodes.fetchall()],
    )


def retrieve_multi_hop(
    conn: psycopg.Connection, params: dict[str, Any], *, entities: list[str],
    seen_ids: list[UUID], per_entity: int,
) -> list[FactCandidate]:
    """Facts sharing an entity with the packet, by entity rank; each fact once."""
    rows = conn.cursor(row_factory=dict_row).execute(
        sql.MULTI_HOP_CANDIDATES,
        {**params, "entities": entities, "seen_ids": seen_ids, "per_entity": per_entity},
    ).fetchall()
    unique: dict[UUID, FactCandidate] = {}
    for row in rows:
        unique.setdefault(row["id"], FactCandidate.from_row(row))
    return list(unique.values())


@dataclass(frozen=True)
class Neighbourhood:
    """The neighbouring turns of every episode that can be a neighbour source
    (sql.TEXT_ARM_CANDIDATES): ``rows`` (``item`` 'neighbour'; the text arm's bring their
    embedding, the nearest events' their distance), the nearest events by id (the rows of
    the turns sent without their payload), and the query vector (float64)."""

    rows: list[dict[str, Any]]
    nearest: dict[UUID, dict[str, Any]]
    query: np.ndarray

    def links(self, source_ids: Sequence[UUID], candidate_ids: set[UUID]) -> list[NeighbourLink]:
        """The links of ``source_ids``, the best source first, each source's turns in order
        (a source whose turns both statements brought, once); a neighbour among
        ``candidate_ids`` by id only, any other with its row."""
        order = {source: position for position, source in enumerate(source_ids)}
        turns: dict[tuple[UUID, int], dict[str, Any]] = {}
        for row in self.rows:
            if row["source_id"] in order:
                turns.setdefault((row["source_id"], row["step"]), row)
        return [NeighbourLink(
            source_id=source, offset=step, neighbour_id=row["id"],
            episode=None if row["id"] in candidate_ids else self._episode(row))
            for (source, step), row in sorted(
                turns.items(), key=lambda turn: (order[turn[0][0]], turn[0][1]))]

    def _episode(self, row: dict[str, Any]) -> EpisodeCandidate:
        if row["payload"] is None:  # sent without it: a nearest event, or a text-arm row
            return EpisodeCandidate.from_row(self.nearest[row["id"]])  # (always a candidate)
        if row.get("distance") is None:
            row["distance"] = cosine_distance(self.query, row["embedding"].to_numpy())
        return EpisodeCandidate.from_row(row)


@dataclass(frozen=True)
class FusedRows:
    """What the fused arms returned: each candidate with its arm ranks, and the turns around
    the episodes that can be the fusion's neighbour sources."""

    hits: list[ArmHit]
    neighbourhood: Neighbourhood


@dataclass(frozen=True)
class ArmRows:
    """The fused arms' rows as fetched: the nearest facts, the nearest events with the turns
    around the nearest few, the text arm with the turns around its episodes."""

    facts: list[dict[str, Any]]
    events: list[dict[str, Any]]
    text: list[dict[str, Any]]


class FusedArms:
    """The fused ranking's statements (``haki.assembler.routines``: each one function call
    whose plans the connection keeps), sent as early as each can go. Created before the
    query vector is known: the text arm is queued on ``conn`` (after BEGIN and the scope, in
    the same pipeline) and, with a ``side`` handle (``Database.sibling``), the side's
    read-only transaction is opened under the same key. While the question is still being
    embedded, :meth:`take_text` brings the text arm's rows in and decodes them. Once the
    vector is in ``params``, :meth:`fetch` sends the nearest facts (on the side, else on
    ``conn``) and the nearest events together: one round trip after the embedding. ``stack``
    closes the side's transaction (rolled back) if the call fails before :meth:`fetch` has
    committed it."""

    def __init__(self, conn: psycopg.Connection, params: dict[str, Any],
                 side: Database | None, stack: ExitStack) -> None:
        self._conn = conn
        self._params = params
        # Binary rows: the text arm's rows bring their embedding, decoded straight into numpy.
        self._text_arm = conn.cursor(row_factory=dict_row, binary=True).execute(
            routines.TEXT_ARM.call, params)
        self._text: list[dict[str, Any]] | None = None
        self._side = ExitStack()
        stack.enter_context(self._side)
        self._beside: psycopg.Connection | None = None
        if side is not None:
            self._beside = self._side.enter_context(
                side.transaction(params["project_id"], pipeline=True, read_only=True))

    def take_text(self) -> None:
        """Bring the text arm's rows in now (a round trip that waits for the arm, then the
        decoding): called while the question is embedded, it takes both off the call's path."""
        if self._text is None:
            self._sync()
            self._text = self._text_arm.fetchall()

    def _sync(self) -> None:
        """Take in the results of everything queued on ``conn`` (a nested pipeline syncs)."""
        with self._conn.pipeline():
            pass

    def fetch(self) -> ArmRows:
        """The vector arm — the nearest facts and the nearest events, each after the breadth
        of its own graph — and the text arm's rows (taken in now if :meth:`take_text` was not
        called: they must be in before the events are queued, or fetching them would wait
        for the events too)."""
        params = self._params
        if self._beside is not None:
            facts = _nearest(self._beside, routines.NEAREST_FACTS, params)
        if self._text is None:
            self._sync()
        events = _nearest(self._conn, routines.NEAREST_EVENTS, params)
        text = self._text_arm.fetchall() if self._text is None else self._text
        if self._beside is None:
            facts = _nearest(self._conn, routines.NEAREST_FACTS, params)
        # The side's COMMIT leaves with its facts, one round trip that waits for both (while
        # the server still searches the events on ``conn``).
        self._side.close()
        return ArmRows(facts.fetchall(), events.fetchall(), text)


def _nearest(conn: psycopg.Connection, arm: routines.Routine, params: dict[str, Any]
             ) -> psycopg.Cursor:
    """Queue a vector arm: its function sets its graph's breadth, then searches it (binary
    rows)."""
    return conn.cursor(row_factory=dict_row, binary=True).execute(arm.call, params)


def retrieve_fused(arms: FusedArms, params: dict[str, Any]) -> FusedRows:
    """The fused arms' rows (:meth:`FusedArms.fetch`) merged by distance (ties by id) and
    ranked, the best ``vector_top_k`` kept (the call's depth,
    :meth:`RetrievalConfig.vector_depth`); then every row either arm returned,
    facts and events, once, with its arm ranks. A text-arm row the vector arm did not return
    gets its distance here, from its stored embedding (cosine distance in float64, as
    pgvector's ``<=>`` computes it to ~1e-7)."""
    rows = arms.fetch()
    query = np.asarray(params["query_vector"], dtype=np.float64)
    nearest = [row for row in rows.events if row["item"] == "event"]
    text_rows = [row for row in rows.text if row["item"] != "neighbour"]
    neighbourhood = Neighbourhood(
        rows=[row for row in rows.text + rows.events if row["item"] == "neighbour"],
        nearest={row["id"]: row for row in nearest}, query=query)
    merged = sorted(rows.facts + nearest,
                    key=lambda row: (row["distance"], row["id"]))[:params["vector_top_k"]]
    hits = {(row["item"], row["id"]): ArmHit(_candidate(row), rank, None)
            for rank, row in enumerate(merged, start=1)}
    for row in text_rows:
        key = (row["item"], row["id"])
        found = hits.get(key)
        if found is None:
            row["distance"] = cosine_distance(query, row["embedding"].to_numpy())
            hits[key] = ArmHit(_candidate(row), None, row["text_arm_rank"])
        else:
            item = found.item
            if isinstance(item, FactCandidate):
                item = replace(item, text_rank=row["text_rank"])
            hits[key] = ArmHit(item, found.vector_rank, row["text_arm_rank"])
    return FusedRows(list(hits.values()), neighbourhood)


def _candidate(row: dict[str, Any]) -> FactCandidate | EpisodeCandidate:
    return (FactCandidate.from_row(row) if row["item"] == "fact"
            else EpisodeCandidate.from_row(row))


def cosine_distance(query: np.ndarray, embedding: np.ndarray) -> float:
    """``1 - cos(query, embedding)``, as pgvector's ``<=>`` (float64 here)."""
    stored = np.asarray(embedding, dtype=np.float64)
    norms = float(np.sqrt(np.dot(query, query) * np.dot(stored, stored)))
    if norms == 0.0:
        return float("nan")  # pgvector's answer for a zero vector
    return 1.0 - max(-1.0, min(1.0, float(np.dot(query, stored)) / norms))
