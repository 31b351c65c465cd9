"""``assemble``: one context call, from the query to the packet and its persisted trace."""

import time
import uuid
from dataclasses import dataclass

import numpy as np

from haki.assembler import sql
from haki.assembler.config import DEFAULT_CONFIG, RetrievalConfig
from haki.assembler.entities import extract_entities
from haki.assembler.packing import Packer
from haki.assembler.retrieval import query_parameters, retrieve, retrieve_multi_hop
from haki.assembler.trace import write_trace
from haki.db import Database
from haki.embedding import Embedder
from haki.models import ContextRequest, ContextResponse
from haki.settings import Settings

#: Statements a call sends besides retrieval: the scope (set by ``Database.transaction``) and
#: the single trace write (BEGIN and COMMIT are not counted as statements). Round trips in the
#: pipelined transaction: BEGIN + scope (the liveness check), then retrieval's own, then the
#: trace write queued with COMMIT.
_SCOPE_AND_TRACE_STATEMENTS = 2
_BEGIN_AND_COMMIT_ROUND_TRIPS = 2


@dataclass(frozen=True)
class Assembly:
    """The response served, and what it took (for metrics, benchmarks and tests)."""

    response: ContextResponse
    #: Decisions traced (facts and episodes considered).
    candidates: int
    facts_served: int
    episodes_served: int
    #: ``embed``, ``retrieval`` (all SQL before the trace), ``trace``, ``total``.
    timings_ms: dict[str, float]
    statements: int
    round_trips: int


def assemble(
    request: ContextRequest,
    *,
    db: Database,
    embedder: Embedder | None,
    settings: Settings,
    config: RetrievalConfig = DEFAULT_CONFIG,
    query_embedding: np.ndarray | None = None,
    fact_candidates_sql: str = sql.FACT_CANDIDATES,
) -> Assembly:
    """Answer one context request (SPEC §4) and persist its trace in the same transaction.

    ``query_embedding`` skips the embedder (benchmarks with synthetic vectors); otherwise
    ``embedder`` embeds the query. ``fact_candidates_sql`` is the statement that yields the
    scored fact candidates: the two-phase one, or the naive full scan the benchmarks compare
    it with (same parameters, same columns); every other step is this function's.
    """
    started = time.perf_counter()
    if query_embedding is None:
        if embedder is None:
            raise ValueError("assemble needs an embedder or a query embedding")
        query_embedding = embedder.embed_query(request.query)
    embedded = time.perf_counter()

    params = query_parameters(request, query_embedding, settings, config)
    packer = Packer(
        budget=request.budget_tokens,
        max_distance=settings.recall_max_distance,
        excerpt_chars=config.excerpt_chars,
    )
    trace_id = uuid.uuid4()
    statements = _SCOPE_AND_TRACE_STATEMENTS
    round_trips = _BEGIN_AND_COMMIT_ROUND_TRIPS
    with db.transaction(request.project_id, pipeline=True) as conn:
        retrieved = retrieve(conn, params, fact_candidates_sql)
        statements += retrieved.statements
        round_trips += retrieved.round_trips
        packer.add_ranked_facts(retrieved.facts)

        if config.use_multi_hop and packer.remaining > 0:
            entities = extract_entities(
                packer.included_texts, request.query, config.multi_hop_max_entities)
            if entities:
                packer.add_multi_hop_facts(retrieve_multi_hop(
                    conn, params, entities=entities, seen_ids=packer.considered_fact_ids,
                    per_entity=config.multi_hop_max_per_entity))
                statements += 1
                round_trips += 1

        packer.add_episodes(retrieved.episodes)
        retrieved_at = time.perf_counter()

        response = ContextResponse(
            packet=packer.packet(missing_purpose=request.purpose is None),
            token_count=packer.tokens_used,
            trace_id=trace_id,
        )
        timings = {
            "embed": _ms(started, embedded),
            "retrieval": _ms(embedded, retrieved_at),
            "total": _ms(started, retrieved_at),
        }
        write_trace(conn, request, response, packer.decisions, timings_ms=timings)
    finished = time.perf_counter()
    timings["trace"] = _ms(retrieved_at, finished)
    timings["total"] = _ms(started, finished)
    return Assembly(
        response=response,
        candidates=len(packer.decisions),
        facts_served=len(response.packet.facts),
        episodes_served=len(response.packet.episodes),
        timings_ms=timings,
        statements=statements,
        round_trips=round_trips,
    )


def _ms(start: float, end: float) -> float:
    return round((end - start) * 1000.0, 3)
