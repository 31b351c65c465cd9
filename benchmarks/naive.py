"""The naive baseline of the design page: score *every* active fact of the scope with the full
hybrid score, then pack ("~200 ms at 10,000 facts", sprint 3).

It is given every advantage that does not change its nature: the score is computed in SQL (no
rows shipped to Python for scoring), the per-candidate extras (conflict check, volatility
horizon) only for the ``candidate_limit`` best rows, and everything after retrieval — packing,
multi-hop, episodes, the one-statement trace — is the assembler's own code. The only
difference from :func:`haki.assembler.assemble` is phase 1: a full scan of the scope instead
of two index-backed top-k arms.

The score is the assembler's formula, written out here so the baseline does not depend on the
assembler's private SQL fragments; ``tests/integration/test_bench_smoke.py`` checks that both
give the same score to the same fact.
"""

import time
import uuid
from typing import Any

import numpy as np
import psycopg
from psycopg.rows import dict_row

from haki.assembler import Assembly, RetrievalConfig
from haki.assembler import sql as assembler_sql
from haki.assembler.candidates import EpisodeCandidate, FactCandidate
from haki.assembler.entities import extract_entities
from haki.assembler.packing import Packer
from haki.assembler.retrieval import query_parameters, retrieve_multi_hop
from haki.assembler.trace import write_trace
from haki.db import Database
from haki.embedding import Embedder
from haki.models import ContextRequest, ContextResponse
from haki.settings import Settings

#: The hybrid score of the assembler (``haki/assembler/sql.py``, SPEC §4 step 3), term for term:
#:   w_sim × (1 − cosine distance) + w_text × ts_rank_cd(…, 32) + w_rec × exp(−Δt / τ).
_SIMILARITY = "(1 - (f.embedding <=> %(query_vector)s))"
_TEXT_RANK = "coalesce(ts_rank_cd(f.search_vector, t.q, 32), 0)"
_RECENCY = """exp(-greatest(extract(epoch FROM now() - coalesce(f.valid_from, f.recorded_from)),
                   0) / %(recency_tau_seconds)s)"""

#: Every in-scope fact scored (a scan of the scope: no index can order by this score), the best
#: ``candidate_limit`` kept, then joined back for what packing needs. The question's terms are
#: ORed into one tsquery the same way as the assembler's full-text arm.
NAIVE_FACT_CANDIDATES = f"""
WITH text_query AS (
    SELECT tsquery_or_agg(plainto_tsquery('simple', term)) AS q
    FROM (
        SELECT term
        FROM unnest(tsvector_to_array(to_tsvector('simple', %(query)s))) AS term
        WHERE char_length(term) > 1 AND NOT (term = ANY (%(stopwords)s))
        ORDER BY char_length(term) DESC, term
        LIMIT %(max_terms)s
    ) AS terms
),
ranked AS MATERIALIZED (
    SELECT f.id,
           (f.embedding <=> %(query_vector)s)::float8 AS distance,
           {_TEXT_RANK}::float8 AS text_rank,
           {_RECENCY}::float8 AS recency,
           (%(w_similarity)s * {_SIMILARITY} + %(w_text)s * {_TEXT_RANK}
            + %(w_recency)s * {_RECENCY})::float8 AS score
    FROM facts AS f
    CROSS JOIN text_query AS t
    WHERE f.project_id = %(project_id)s
      AND f.subject_id = %(subject_id)s
      AND f.status = 'active'
      AND (f.valid_to IS NULL OR f.valid_to > now())
    ORDER BY score DESC, f.id
    LIMIT %(candidate_limit)s
)
SELECT f.id, f.predicate, f.value, f.confidence, f.valid_from, f.source_event_ids,
       f.volatility, r.distance, r.text_rank, r.recency, r.score,
       EXISTS (
           SELECT 1 FROM conflict_sets AS c
           WHERE c.project_id = f.project_id AND c.subject_id = f.subject_id
             AND c.status = 'open' AND f.id = ANY (c.fact_ids)
       ) AS conflict_open,
       CASE f.volatility
           WHEN 'stable' THEN false
           ELSE coalesce(f.last_reinforced_at, f.valid_from, f.recorded_from)
                + make_interval(secs => CASE f.volatility
                      WHEN 'slow' THEN %(horizon_slow_seconds)s
                      WHEN 'volatile' THEN %(horizon_volatile_seconds)s
                      ELSE %(horizon_ephemeral_seconds)s END) < now()
       END AS horizon_passed
FROM ranked AS r
JOIN facts AS f USING (id)
ORDER BY r.score DESC, f.id
"""


def naive_retrieve(
    conn: psycopg.Connection, params: dict[str, Any],
) -> tuple[list[FactCandidate], list[EpisodeCandidate]]:
    """The naive facts and the assembler's episodes, in one pipelined round trip."""
    with conn.pipeline():
        conn.execute(assembler_sql.PLANNER_SETTINGS, params)
        facts = conn.cursor(row_factory=dict_row).execute(NAIVE_FACT_CANDIDATES, params)
        episodes = conn.cursor(row_factory=dict_row).execute(
            assembler_sql.EPISODE_CANDIDATES, params)
    return ([FactCandidate.from_row(r) for r in facts.fetchall()],
            [EpisodeCandidate.from_row(r) for r in episodes.fetchall()])


def naive_assemble(
    request: ContextRequest, *, db: Database, embedder: Embedder | None, settings: Settings,
    config: RetrievalConfig, query_embedding: np.ndarray,
) -> Assembly:
    """One context call the naive way; the same steps and timings as ``assemble``.

    ``embedder`` (when given) embeds the query text for the timing, like the assembler's
    end-to-end figure; retrieval uses ``query_embedding`` (the synthetic vector).
    """
    started = time.perf_counter()
    if embedder is not None:
        embedder.embed_query(request.query)
    embedded = time.perf_counter()
    params = query_parameters(request, query_embedding, settings, config)
    packer = Packer(budget=request.budget_tokens, max_distance=settings.recall_max_distance,
                    excerpt_chars=config.excerpt_chars)
    # Counted as the assembler counts its own: scope, planner settings, facts, episodes and
    # trace statements; BEGIN + scope, the retrieval batch, the trace queued with COMMIT.
    statements, round_trips = 5, 3
    with db.transaction(request.project_id, pipeline=True) as conn:
        facts, episodes = naive_retrieve(conn, params)
        packer.add_ranked_facts(facts)
        if config.use_multi_hop and packer.remaining > 0:
            entities = extract_entities(
                packer.included_texts, request.query, config.multi_hop_max_entities)
            if entities:
                packer.add_multi_hop_facts(retrieve_multi_hop(
                    conn, params, entities=entities, seen_ids=packer.considered_fact_ids,
                    per_entity=config.multi_hop_max_per_entity))
                statements += 1
                round_trips += 1
        packer.add_episodes(episodes)
        retrieved_at = time.perf_counter()
        response = ContextResponse(
            packet=packer.packet(missing_purpose=request.purpose is None),
            token_count=packer.tokens_used, trace_id=uuid.uuid4())
        timings = {"embed": _ms(started, embedded), "retrieval": _ms(embedded, retrieved_at),
                   "total": _ms(started, retrieved_at)}
        write_trace(conn, request, response, packer.decisions, timings_ms=timings)
    finished = time.perf_counter()
    timings["trace"] = _ms(retrieved_at, finished)
    timings["total"] = _ms(started, finished)
    return Assembly(
        response=response, candidates=len(packer.decisions),
        facts_served=len(response.packet.facts), episodes_served=len(response.packet.episodes),
        timings_ms=timings, statements=statements, round_trips=round_trips)


def _ms(start: float, end: float) -> float:
    return round((end - start) * 1000.0, 3)
