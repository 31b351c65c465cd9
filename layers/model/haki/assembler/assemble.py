"""``assemble``: one context call, from the query vector to the packet and its persisted trace."""

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg

from haki.assembler.config import RetrievalConfig
from haki.assembler.entities import extract_entities
from haki.assembler.fusion import fuse, neighbour_sources, propagate
from haki.assembler.packing import Packer
from haki.assembler.retrieval import (
    FusedArms,
    query_parameters,
    retrieve,
    retrieve_fused,
    retrieve_multi_hop,
)
from haki.assembler.trace import new_trace_id, write_trace
from haki.db import Database
from haki.embedding import Embedder
from haki.models import ContextRequest, ContextResponse


@dataclass(frozen=True)
class QueryVector:
    """The query's embedding, what computing it cost (recorded in the call row) and when it
    started (``time.perf_counter``; None: before the call, so not part of its latency)."""

    vector: np.ndarray
    embed_ms: float = 0.0
    started: float | None = None


#: The query vector, computed or still being computed (:func:`embed_in_background`).
QuerySource = QueryVector | Future[QueryVector]


def embed_query(embedder: Embedder, text: str) -> QueryVector:
    """Embed a question, timed, before the call: its cost is added to the call's latency."""
    return compute_now(lambda: embedder.embed_query(text))


def compute_now(embed: Callable[[], np.ndarray]) -> QueryVector:
    """:func:`embed_query` for any function returning the query vector."""
    return _timed(embed, part_of_the_call=False)


def _timed(embed: Callable[[], np.ndarray], *, part_of_the_call: bool = True) -> QueryVector:
    """Run ``embed``, timed; when it is ``part_of_the_call`` (in the background, as the call
    starts), the call's latency runs from its start, else its cost is added."""
    started = time.perf_counter()
    vector = embed()
    return QueryVector(vector, _ms(started, time.perf_counter()),
                       started if part_of_the_call else None)


#: Threads that embed questions while the assembler's first round trip is in flight. The
#: model runs in onnxruntime with the GIL released, so embedding and the database overlap.
#: A few, not one: the local server serves requests from several threads at once.
_EMBEDDING = ThreadPoolExecutor(max_workers=4, thread_name_prefix="haki-embed")


def embed_in_background(embedder: Embedder, text: str) -> Future[QueryVector]:
    """Start embedding a question; :func:`assemble` takes the future and sends what needs
    no vector (BEGIN, the scope, the planner settings, the text arm) before it waits."""
    return compute_in_background(lambda: embedder.embed_query(text))


#: How long the caller waits for a thread to take the embedding up (all may be busy).
_TAKE_UP_WAIT_S = 0.002


def compute_in_background(embed: Callable[[], np.ndarray]) -> Future[QueryVector]:
    """:func:`embed_in_background` for any function returning the query vector (the
    benchmarks embed the real question and search with the synthetic vector of their data).

    Returns once a thread has taken the embedding up: waiting releases the GIL, which the
    thread holds while it prepares the model's input and gives back as the model runs. Without
    the wait the caller kept the GIL through its own first Python work — the call's
    parameters, the text arm's statement — and the model started ~1 ms late, on a path where
    it is the last thing the call waits for."""
    taken_up = threading.Event()

    def job() -> QueryVector:
        taken_up.set()
        return _timed(embed)

    future = _EMBEDDING.submit(job)
    taken_up.wait(_TAKE_UP_WAIT_S)
    return future


def _resolved(query: QuerySource) -> QueryVector:
    return query.result() if isinstance(query, Future) else query


@dataclass(frozen=True)
class Assembly:
    """The response served, and what it took (for metrics, benchmarks and tests)."""

    response: ContextResponse
    #: Decisions traced (facts and episodes considered).
    candidates: int
    facts_served: int
    episodes_served: int
    #: ``embed`` (the query vector's own cost), ``retrieval`` (all SQL before the trace),
    #: ``trace`` (the trace write with the commit), ``total`` (embed + the transaction).
    timings_ms: dict[str, float]


def assemble(
    request: ContextRequest, query: QuerySource, *, db: Database, config: RetrievalConfig
) -> Assembly:
    """Answer one context request (docs/spec.md §4) and persist its trace in the same
    transaction. Every knob — the ranking preset, weights, arms, the recall floor, volatility
    horizons, the candidate strategy — comes from ``config``.

    ``query`` may still be computing (a future, :func:`embed_in_background`): the fused
    ranking queues BEGIN, the scope and the text arm first (and opens the nearest facts'
    transaction on the second connection), takes the text arm's rows in while the question
    is embedded, and waits for the vector only then; so the server's first work and the
    embedding overlap. The timings say what the call waited for the vector (``embed_wait``)."""
    started = time.perf_counter()
    params = query_parameters(request, None, config)
    packer = Packer(
        budget=request.budget_tokens,
        max_distance=config.recall_max_distance,
        excerpt_chars=config.excerpt_chars,
        excerpt_with_kind=config.excerpt_with_kind,
    )
    trace_id = new_trace_id()
    with db.transaction(request.project_id, pipeline=True,
                        durable=config.trace_durable_commit) as conn, ExitStack() as stack:
        arms = None
        if config.ranking == "fused":
            arms = FusedArms(conn, params, db.sibling() if config.parallel_arms else None,
                             stack)
            if isinstance(query, Future) and not query.done():
                arms.take_text()
        waiting = time.perf_counter()
        vector = _resolved(query)
        waited = time.perf_counter()
        params["query_vector"] = vector.vector
        if arms is not None:
            _pack_fused(params, packer, config, arms)
        else:
            _pack_seed(conn, params, packer, config, request.query)
        retrieved_at = time.perf_counter()

        response = ContextResponse(
            packet=packer.packet(missing_purpose=request.purpose is None),
            token_count=packer.tokens_used,
            trace_id=trace_id,
        )
        first = started if vector.started is None else min(started, vector.started)
        # Without overlap (a vector computed before the call), its cost is added.
        before = vector.embed_ms if vector.started is None else 0.0
        timings = {
            "embed": vector.embed_ms,
            "embed_wait": _ms(waiting, waited),
            "retrieval": _ms(started, retrieved_at),
            "total": round(before + _ms(first, retrieved_at), 3),
        }
        write_trace(conn, request, response, packer.decisions, timings_ms=timings)
    finished = time.perf_counter()
    timings["trace"] = _ms(retrieved_at, finished)
    timings["total"] = round(before + _ms(first, finished), 3)
    return Assembly(
        response=response,
        candidates=len(packer.decisions),
        facts_served=len(response.packet.facts),
        episodes_served=len(response.packet.episodes),
        timings_ms=timings,
    )


def _pack_fused(params: dict[str, Any], packer: Packer, config: RetrievalConfig,
                arms: FusedArms) -> None:
    """One list of facts and episodes: both arms, the fusion, the neighbours of the best
    episodes, then one greedy pass under the budget."""
    found = retrieve_fused(arms, params)
    ranked = fuse(found.hits, config)
    sources = neighbour_sources(ranked, config) if config.use_neighbours else []
    if sources:
        links = found.neighbourhood.links(sources, {r.id for r in ranked})
        ranked = propagate(ranked, links, config)
    packer.add_fused(ranked)


def _pack_seed(conn: psycopg.Connection, params: dict[str, Any], packer: Packer,
               config: RetrievalConfig, query: str) -> None:
    """The design page's order: ranked facts, multi-hop on the budget left, then episodes."""
    retrieved = retrieve(conn, params, config)
    packer.add_ranked_facts(retrieved.facts)
    if config.use_multi_hop and packer.remaining > 0:
        entities = extract_entities(packer.included_texts, query, config.multi_hop_max_entities)
        if entities:
            packer.add_multi_hop_facts(retrieve_multi_hop(
                conn, params, entities=entities, seen_ids=packer.considered_fact_ids,
                per_entity=config.multi_hop_max_per_entity))
    packer.add_episodes(retrieved.episodes)


def _ms(start: float, end: float) -> float:
    return round((end - start) * 1000.0, 3)
