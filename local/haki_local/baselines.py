"""The design page's ranking (``seed``) and the naive exhaustive scan: comparison baselines
for ``haki eval`` and the benchmarks, never served by the API.

``seed`` ranks facts by ``0.6 × cosine + 0.25 × ts_rank_cd + 0.15 × recency`` over the union of
the 64 nearest facts and the 64 best full-text matches, expands one hop through the entities of
the packed facts, then packs the 8 nearest episodes in what budget is left. The naive baseline
(``exhaustive``) scores *every* active fact of the scope with the same formula before packing —
what a benchmark compares the indexed arms against. Both reuse the core's packer and trace
write, so their packets and traces have the served call's shape.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import numpy as np
from psycopg.rows import dict_row

from haki.assembler.assemble import Assembly, respond, summarize
from haki.assembler.candidates import EpisodeCandidate, FactCandidate
from haki.assembler.config import RetrievalConfig
from haki.assembler.packing import Packer
from haki.db import Database
from haki.db.scope_indexes import graph_name
from haki.models import ContextRequest
from haki.text import fact_text
from haki_local.entities import extract_entities

_DAY_SECONDS = 86_400.0

def _planner_settings(table: str) -> str:
    """Transaction-local planner settings for the vector arms (RDS-Proxy-safe: nothing outlives
    the transaction). pgvector's HNSW scan returns at most ``ef_search`` rows and the scope
    filter applies after the scan, so a scope that is a small slice of the table would get a
    handful of rows out of 64. Iterative scans (pgvector 0.8) keep scanning until ``LIMIT`` rows
    pass the filter (or ``max_scan_tuples`` is reached); ``relaxed_order`` is never worse than
    ``strict_order`` in recall and faster, and the CTEs below re-sort their few rows exactly.
    The search breadth follows the size of the graph searched (``pg_class.reltuples``, kept by
    ANALYZE/VACUUM and set by an index build): one unit per ``hnsw_rows_per_ef`` rows, between
    ``hnsw_ef_search_min`` and pgvector's maximum. A larger graph needs a wider search to keep
    recall — for a scope of the whole table as for a slice of it — a small one would only pay.
    The graph searched is the scope's own when it has a valid one (``haki.db.scope_indexes``:
    a big subject's partial index, ``%(<table>_graph)s`` its name, which the planner then
    prefers), else the table's. Small scopes do not use HNSW at all: the planner scans them
    exactly through the scope index."""
    return f"""
SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true),
       set_config('hnsw.ef_search',
                  least(%(ef_search_max)s, greatest(%(ef_search_min)s,
                        coalesce((SELECT c.reltuples
                                  FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid
                                  WHERE i.indexrelid = to_regclass(%({table}_graph)s)
                                    AND i.indrelid = '{table}'::regclass AND i.indisvalid
                                    AND c.reltuples >= 0),
                                 (SELECT reltuples FROM pg_class
                                  WHERE oid = '{table}'::regclass))
                        / %(rows_per_ef)s))::int::text,
                  true),
       set_config('hnsw.max_scan_tuples', %(max_scan_tuples)s, true)
"""


#: The facts' graph sets the breadth of the search (the episode arm takes 8 rows only).
PLANNER_SETTINGS = _planner_settings("facts")

#: The hard filters every fact arm applies before any score (docs/spec.md §4.1), minus the two that
#: must be traced when they bite: open conflicts (``blocked``) and volatility (``excluded``).
FACT_SCOPE = """
    f.project_id = %(project_id)s
    AND f.subject_id = %(subject_id)s
    AND f.status = 'active'
    AND (f.valid_to IS NULL OR f.valid_to > now())
"""


#: The packet's and the rules' columns of fact ``f`` (its id aside): what the packet, the trace
#: and the per-candidate checks (open conflict, volatility horizon) need.
FACT_COLUMNS = """
    f.predicate,
    f.value,
    f.confidence,
    f.valid_from,
    f.source_event_ids,
    f.volatility,
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
    END AS horizon_passed"""


def score_components(tsquery: str) -> str:
    """The three terms of the hybrid score of fact ``f``, text rank against ``tsquery``."""
    return f"""
    (f.embedding <=> %(query_vector)s)::float8 AS distance,
    coalesce(ts_rank_cd(f.search_vector, {tsquery}, 32), 0)::float8 AS text_rank,
    exp(-greatest(extract(epoch FROM now() - coalesce(f.valid_from, f.recorded_from)), 0)
        / %(recency_tau_seconds)s)::float8 AS recency"""


def scored_fact_columns(tsquery: str) -> str:
    """Columns of a scored fact, text rank against ``tsquery`` (an SQL expression).

    Only what the packet, the trace and the rules need — never the 384-d embedding itself
    (decoding it costs more than scoring).
    """
    return f"""
    f.id,
    {score_components(tsquery)},
    {FACT_COLUMNS}
"""


#: The hybrid score of a row that has ``distance``, ``text_rank`` and ``recency`` columns.
SCORE = """(%(w_similarity)s * (1 - distance) + %(w_text)s * text_rank
        + %(w_recency)s * recency)::float8"""

def _score_candidates(ids: str) -> str:
    """The tail of a fact-candidates statement: the facts whose ids the CTE ``ids`` lists,
    with the packet's columns and the full score, best first, at most ``candidate_limit``."""
    return f"""scored AS (
    SELECT {scored_fact_columns("t.q")}
    FROM {ids}
    JOIN facts AS f USING (id)
    CROSS JOIN text_query AS t
)
SELECT scored.*, {SCORE} AS score
FROM scored
ORDER BY score DESC, id
LIMIT %(candidate_limit)s
"""


#: The question's terms, as both rankings pick them: its lexemes as the 'simple' parser reads
#: them (any user text is accepted), stop words dropped, the longest ``max_terms`` kept.
QUERY_TERMS = """
        SELECT term
        FROM unnest(tsvector_to_array(to_tsvector('simple', %(query)s))) AS term
        WHERE char_length(term) > 1 AND NOT (term = ANY (%(stopwords)s))
        ORDER BY char_length(term) DESC, term
        LIMIT %(max_terms)s"""

#: The question's terms as two tsqueries: ``q`` ORs them, ``q_all`` ANDs them. Parsed by the
#: same 'simple' configuration as ``websearch_to_tsquery('simple', query)`` (any user text is
#: accepted: quotes, '-', 'or', SQL, emoji), but ORed rather than ANDed so natural questions
#: match the facts that share their meaningful terms; stop words are dropped (``ts_rank_cd``
#: ignores term rarity) and the longest terms are kept first when a huge query has more than
#: ``max_terms``. Each term becomes a tsquery by ``plainto_tsquery`` (never a syntax error),
#: combined by the ``tsquery_or_agg`` / ``tsquery_and_agg`` aggregates (0004). NULL when no
#: term is left: the arm then returns nothing.
TEXT_QUERY_CTE = f"""
text_query AS (
    SELECT tsquery_or_agg(plainto_tsquery('simple', term)) AS q,
           tsquery_and_agg(plainto_tsquery('simple', term)) AS q_all
    FROM ({QUERY_TERMS}) AS terms
)
"""

#: Phase 1 (candidates from the two indexes) and phase 2 (full hybrid score on their union
#: only), in one statement. The score:
#:   w_sim × cosine similarity + w_text × ts_rank_cd(normalised to [0, 1) by flag 32)
#:   + w_rec × exp(-Δt / τ),  Δt = now() - coalesce(valid_from, recorded_from).
#: Weights come from ``RetrievalConfig``; an ablation sets an arm's switch to false, which the
#: planner folds into a one-time filter (the arm is not executed).
#: The full-text arm is ``haki_text_search`` (migration 0008): under row-level security the
#: GIN index cannot serve the leaky ``@@`` operator for the runtime role, so the function runs
#: as the owner and applies the tenant boundary itself. It ranks at most ``text_rank_cap``
#: facts holding every term (``q_all``, the best text matches, usually few) plus at most
#: ``text_rank_cap`` holding any term: ``ts_rank_cd`` has a cost per row ranked, and an ORed
#: common term can match a large share of a big scope. Below the cap the ranking is exact;
#: past it the any-term side ranks the first matches found (the vector arm still covers the
#: scope; see RetrievalConfig.text_rank_cap).
TWO_PHASE_FACT_CANDIDATES = f"""
WITH {TEXT_QUERY_CTE},
vector_arm AS MATERIALIZED (
    SELECT f.id, f.embedding <=> %(query_vector)s AS distance
    FROM facts AS f
    WHERE %(use_vector_arm)s AND {FACT_SCOPE}
    ORDER BY f.embedding <=> %(query_vector)s
    LIMIT %(top_k)s
),
text_arm AS MATERIALIZED (
    SELECT hits.id
    FROM text_query AS t,
         haki_text_search(%(subject_id)s, t.q, t.q_all, '{{}}'::uuid[], %(text_rank_cap)s,
                          %(top_k)s) AS hits
    WHERE %(use_text_arm)s AND t.q IS NOT NULL
),
candidates AS (
    SELECT id FROM vector_arm
    UNION
    SELECT id FROM text_arm
),
{_score_candidates("candidates")}"""

#: The design page's naive baseline, for the benchmarks only (``fact_candidates =
#: "exhaustive"``): *every* active fact of the scope scored with the full hybrid score (a scan
#: of the scope: no index can order by this score), the best ``candidate_limit`` kept, and only
#: those joined back for the packet's columns and the per-candidate checks (conflicts,
#: volatility). It is given every advantage that does not change its nature — the score in
#: SQL, the same fragments, columns and score as phase 2 — so a benchmark compares phase 1
#: alone (``tests/integration/test_bench_smoke.py`` checks both give a fact the same score).
EXHAUSTIVE_FACT_CANDIDATES = f"""
WITH {TEXT_QUERY_CTE},
ranked AS MATERIALIZED (
    SELECT components.id
    FROM (
        SELECT f.id, {score_components("t.q")}
        FROM facts AS f
        CROSS JOIN text_query AS t
        WHERE {FACT_SCOPE}
    ) AS components
    ORDER BY {SCORE} DESC, components.id
    LIMIT %(candidate_limit)s
),
{_score_candidates("ranked")}"""


#: Multi-hop expansion: for each entity (in rank order), up to ``per_entity`` facts of the scope
#: that mention it, full-text only (no new embedding), skipping facts already considered.
#: The facts are picked by text rank first (``haki_text_search``, the full-text arm's own
#: function), and only those few are then scored with the same formula, so the trace can show
#: where they would have ranked.
MULTI_HOP_CANDIDATES = f"""
SELECT hopped.*, {SCORE} AS score
FROM (
    SELECT hop.entity, hop.position,
           {scored_fact_columns("plainto_tsquery('simple', hop.entity)")}
    FROM unnest(%(entities)s::text[]) WITH ORDINALITY AS hop(entity, position)
    CROSS JOIN LATERAL haki_text_search(
        %(subject_id)s, plainto_tsquery('simple', hop.entity),
        plainto_tsquery('simple', hop.entity), %(seen_ids)s::uuid[], %(text_rank_cap)s,
        %(per_entity)s) AS picked
    JOIN facts AS f ON f.id = picked.id
) AS hopped
ORDER BY hopped.position, hopped.text_rank DESC, hopped.id
"""

#: Episodes: the nearest events of the same scope (HNSW on events.embedding, or an exact scan
#: of a small scope). The payload is needed for the excerpt; eight rows at most.
EPISODE_CANDIDATES = """
WITH nearest AS MATERIALIZED (
    SELECT e.id, e.kind, e.payload, e.occurred_at,
           (e.embedding <=> %(query_vector)s)::float8 AS distance
    FROM events AS e
    WHERE %(use_episodes)s
      AND e.project_id = %(project_id)s AND e.subject_id = %(subject_id)s
    ORDER BY e.embedding <=> %(query_vector)s
    LIMIT %(episode_top_k)s
)
SELECT * FROM nearest ORDER BY distance, id
"""


#: The served configuration's knobs a baseline shares with it: the filters' horizons, the
#: recall floor, the HNSW breadth and the trace's durability.
_SHARED = ("recall_max_distance", "volatility_horizon_slow_days",
           "volatility_horizon_volatile_days", "volatility_horizon_ephemeral_days",
           "hnsw_ef_search_min", "hnsw_ef_search_max", "hnsw_rows_per_ef",
           "hnsw_max_scan_tuples", "trace_durable_commit")


@dataclass(frozen=True)
class SeedConfig(RetrievalConfig):
    """The seed ranking's knobs, beside the served assembler's (whose filters, horizons,
    recall floor and HNSW breadth it applies the same way)."""

    #: The design page's excerpt: ``kind: text``.
    excerpt_with_kind: bool = True
    #: Phase 1: rows taken from each arm (vector, full-text) before the union.
    top_k: int = 64
    #: Phase 2: at most this many union rows are scored, packed and traced.
    candidate_limit: int = 256
    weight_similarity: float = 0.6
    weight_text: float = 0.25
    weight_recency: float = 0.15
    #: Recency decays as exp(-Δt / τ), τ in days.
    recency_tau_days: float = 30.0
    episode_top_k: int = 8
    multi_hop_max_entities: int = 2
    multi_hop_max_per_entity: int = 5
    #: At most this many matching rows are ranked by ts_rank_cd (a cost per row), for facts
    #: holding all the question's terms and again for facts holding any.
    text_rank_cap: int = 500
    use_recency: bool = True
    use_multi_hop: bool = True
    #: Score every active fact of the scope (the naive baseline) instead of the two arms.
    exhaustive: bool = False

    @classmethod
    def like(cls, served: RetrievalConfig, **changes: Any) -> "SeedConfig":
        """The baseline with the served configuration's shared knobs, and ``changes``."""
        return cls(**{name: getattr(served, name) for name in _SHARED}, **changes)


def seed_parameters(request: ContextRequest, vector: np.ndarray,
                config: SeedConfig) -> dict[str, Any]:
    r = config
    return {
        "project_id": request.project, "subject_id": request.subject_id,
        "query": request.query, "query_vector": vector,
        "stopwords": config.stopword_list, "max_terms": r.max_query_terms,
        "text_rank_cap": config.text_rank_cap, "top_k": config.top_k,
        "candidate_limit": config.candidate_limit, "episode_top_k": config.episode_top_k,
        "w_similarity": config.weight_similarity, "w_text": config.weight_text,
        "w_recency": config.weight_recency if config.use_recency else 0.0,
        "recency_tau_seconds": config.recency_tau_days * _DAY_SECONDS,
        "horizon_slow_seconds": r.volatility_horizon_slow_days * _DAY_SECONDS,
        "horizon_volatile_seconds": r.volatility_horizon_volatile_days * _DAY_SECONDS,
        "horizon_ephemeral_seconds": r.volatility_horizon_ephemeral_days * _DAY_SECONDS,
        "use_vector_arm": config.use_vector_arm, "use_text_arm": config.use_text_arm,
        "use_episodes": config.use_episodes,
        "facts_graph": f"public.{graph_name('facts', request.project, request.subject_id)}",
        "ef_search_min": r.hnsw_ef_search_min, "ef_search_max": r.hnsw_ef_search_max,
        "rows_per_ef": r.hnsw_rows_per_ef, "max_scan_tuples": str(r.hnsw_max_scan_tuples),
    }


class SeedPacker(Packer):
    """The seed's order: ranked facts, multi-hop facts on the budget left, then episodes."""

    def add_ranked_facts(self, candidates: list[FactCandidate]) -> None:
        for rank, candidate in enumerate(candidates, start=1):
            self.decide_fact(candidate, rank, included_reason="top_score", gated=True)

    def add_multi_hop_facts(self, candidates: list[FactCandidate]) -> None:
        for rank, candidate in enumerate(candidates, start=1):
            self.decide_fact(candidate, rank, included_reason="multi_hop_expansion", gated=False)

    def add_episodes(self, candidates: list[EpisodeCandidate]) -> None:
        """An episode's score is its similarity (cosine alone)."""
        for rank, episode in enumerate(candidates, start=1):
            self.decide_episode(episode, rank, score=episode.similarity,
                                included_reason="episode_match", gated=True)

    @property
    def included_texts(self) -> list[str]:
        return [fact_text(f.predicate, f.value) for f in self.facts]

    @property
    def considered_fact_ids(self) -> list[UUID]:
        return [d.fact_id for d in self.decisions if d.fact_id is not None]


def assemble_seed(request: ContextRequest, embed: Callable[[], np.ndarray], *, db: Database,
                  config: SeedConfig) -> Assembly:
    """One context call ranked the seed's way (or the naive way), its trace written as a
    served call's is. The question is embedded first: nothing overlaps."""
    started = time.perf_counter()
    vector = embed()
    embed_ms = round((time.perf_counter() - started) * 1000.0, 3)
    params = seed_parameters(request, vector, config)
    packer = SeedPacker(budget=request.budget_tokens,
                        max_distance=config.recall_max_distance,
                        excerpt_chars=config.excerpt_chars,
                        excerpt_with_kind=config.excerpt_with_kind)
    with db.transaction(request.project, pipeline=True,
                        durable=config.trace_durable_commit) as conn:
        conn.execute(PLANNER_SETTINGS, params)
        statement = EXHAUSTIVE_FACT_CANDIDATES if config.exhaustive else TWO_PHASE_FACT_CANDIDATES
        facts = conn.cursor(row_factory=dict_row).execute(statement, params)
        episodes = conn.cursor(row_factory=dict_row).execute(EPISODE_CANDIDATES, params)
        packer.add_ranked_facts([FactCandidate.from_row(r) for r in facts.fetchall()])
        entities = (extract_entities(packer.included_texts, request.query,
                                     config.multi_hop_max_entities)
                    if config.use_multi_hop and packer.remaining > 0 else [])
        if entities:
            rows = conn.cursor(row_factory=dict_row).execute(MULTI_HOP_CANDIDATES, {
                **params, "entities": entities, "seen_ids": packer.considered_fact_ids,
                "per_entity": config.multi_hop_max_per_entity}).fetchall()
            unique: dict[UUID, FactCandidate] = {}
            for row in rows:
                unique.setdefault(row["id"], FactCandidate.from_row(row))
            packer.add_multi_hop_facts(list(unique.values()))
        packer.add_episodes([EpisodeCandidate.from_row(r) for r in episodes.fetchall()])
        timings = {"embed": embed_ms}
        response = respond(conn, request, packer, started=started, timings_ms=timings)
    return summarize(response, packer, started=started, timings_ms=timings)
