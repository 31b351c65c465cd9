"""Every retrieval knob, in one frozen object with documented defaults, and the two named
ranking presets.

- ``fused`` (the default): facts and episodes in one candidate list under one budget, ordered
  by a reciprocal-rank fusion of a vector arm and an idf-weighted full-text arm over both,
  with the neighbouring turns of the best episodes propagated (``fusion.py``). Every part
  was kept because an ablation on the dev data (REALTALK, the bilingual set) showed it worth
  ≥ 0.005 recall (docs/benchmarks.md, "Retrieval quality").
- ``seed``: the design page's formula (facts by a weighted sum of cosine, ts_rank_cd and
  recency from now, multi-hop, then the 8 nearest episodes), reproduced exactly, for
  comparison.

The weights are documented here but are not part of the public API contract: they may change
between versions. The arm switches exist for ablation studies (``haki eval``) and the
candidate strategy for the benchmarks' naive baseline; production runs with a preset and the
few knobs the environment sets (:meth:`RetrievalConfig.from_settings`).
"""

import math
from dataclasses import dataclass, field, replace
from typing import Literal

from haki.settings import Settings

#: Where fact candidates come from under ``seed`` (see ``sql.FACT_CANDIDATES``).
CandidateStrategy = Literal["two_phase", "exhaustive"]
#: The ranking preset: the fused list (default) or the seed's formula.
Ranking = Literal["fused", "seed"]

#: Words that carry no meaning for the full-text arm, English and French. The arm ORs the
#: question's terms (``websearch_to_tsquery`` alone ANDs them, so natural questions would
#: match nothing); without this list "the", "de" or "is" would match nearly every fact and
#: crowd the arm's 64 slots, since ``ts_rank_cd`` has no notion of term rarity.
STOPWORDS: frozenset[str] = frozenset(
    """
    a an and are as at be been but by can could did do does for from had has have how i if in
    into is it its me my no not of on or our should so than that the their them then there
    these they this to was we were what when where which who whom why will with would you your
    au aux avec ce ces cette dans de des du elle en est et il ils je la le les leur lui ma mais
    me mes mon ne nous on ou où par pas pour qu que quel quelle quelles quels qui sa se ses son
    sont sur ta te tes ton tu un une vos votre vous y est-ce
    """.split()
)


@dataclass(frozen=True)
class RetrievalConfig:
    """Every tunable of the assembler. Defaults are the production values (docs/spec.md §4)."""

    ranking: Ranking = "fused"

    # --- fused ranking --------------------------------------------------------------------
    #: Vector arm: the nearest facts and the nearest events of the scope (each by its HNSW
    #: index), merged by cosine distance, the best ``depth`` kept and ranked. The depth follows
    #: the call's budget (:meth:`vector_depth`): ``vector_depth_per_token`` candidates per
    #: budget token, at least ``vector_top_k_min``, at most ``vector_top_k``. A packet holds
    #: ~40–60 items at 900 tokens and ~100–120 at 2,000 (REALTALK, the bilingual set), so a
    #: fixed depth was either too deep for small budgets or too shallow for large ones: at 2,000
    #: tokens 96 candidates leave the bilingual packets 14% empty (recall −0.016; 128 fill
    #: them), while at 900 tokens 96 recall as much as 128 (REALTALK −0.0006, bilingual
    #: +0.0066) and 64 does not (REALTALK −0.0086). 96 is also below the HNSW search breadth
    #: of 100, so the scan finishes in one pass: the nearest events at 100k facts took
    #: 4.6 → 2.5 ms (docs/benchmarks.md, "Latency work").
    vector_top_k: int = 256
    vector_top_k_min: int = 96
    vector_depth_per_token: float = 0.064
    #: Text arm: the best ``text_top_k`` facts and events by the sum of BM25's idf over the
    #: query terms they hold (``haki_idf_search``, migration 0015; term frequency and length
    #: normalisation were each worth < 0.005 recall, so they are not computed). Deeper than 32
    #: the arm adds more noise than evidence (REALTALK: 128 costs 0.006 recall at 2000 tokens).
    text_top_k: int = 32
    #: Text-arm candidates: the rows holding the query's rarest terms, taken while their
    #: document frequencies add up to at most this (REALTALK: 100 to 1000 give the same
    #: recall), then scored on every term. Bounds the arm's work on a scope of any size.
    text_candidates: int = 100
    #: Reciprocal-rank fusion: score = Σ_arm weight / (rrf_k + rank). The vector arm counts
    #: double: equal weights cost 0.012 recall at 900 tokens on REALTALK (k = 60: 0.004).
    rrf_k: float = 30.0
    rrf_weight_vector: float = 2.0
    rrf_weight_text: float = 1.0
    #: Neighbour propagation: each of the ``neighbour_sources`` best episodes passes
    #: ``neighbour_share`` × its score, divided by the distance in turns, to the events up to
    #: ``neighbour_span`` turns before and after it (same scope, by ``occurred_at``) — a reply
    #: often carries the evidence its question lacks. REALTALK: +0.010 recall at 900 tokens,
    #: +0.014 at 2000. 8 sources recall as much as 32 and trace a quarter of the rows.
    neighbour_share: float = 0.3
    neighbour_span: int = 2
    neighbour_sources: int = 8
    #: Episode excerpts carry the payload text only: the packet already has the ``kind``, and
    #: repeating "conversation.message: " costs 5 tokens an episode (REALTALK: 0.023 recall).
    excerpt_with_kind: bool = False

    # --- seed ranking ---------------------------------------------------------------------
    #: Phase 1: rows taken from each arm (vector, full-text) before the union.
    top_k: int = 64
    #: Phase 2: at most this many union rows are scored, packed and traced.
    candidate_limit: int = 256
    #: Hybrid score weights: cosine similarity, ts_rank_cd, recency.
    weight_similarity: float = 0.6
    weight_text: float = 0.25
    weight_recency: float = 0.15
    #: Recency decays as exp(-Δt / τ), τ in days.
    recency_tau_days: float = 30.0
    #: Episodes: nearest events of the scope, packed after the facts in the same budget.
    episode_top_k: int = 8
    #: Multi-hop: at most this many entities, this many facts each, one hop.
    multi_hop_max_entities: int = 2
    multi_hop_max_per_entity: int = 5
    # --- both -----------------------------------------------------------------------------
    #: Full-text arms: at most this many distinct query terms, longest first (bounds huge
    #: queries), stop words dropped.
    max_query_terms: int = 32
    #: Full-text arm and multi-hop: at most this many matching rows are ranked by ts_rank_cd
    #: (~7 µs a row), for facts holding all the question's terms and again for facts holding
    #: any. Exact wherever the terms match fewer facts; past it, the any-term side ranks the
    #: first matches found — a term that common carries little signal, the all-terms side
    #: still brings the precise matches, and the vector arm covers the scope regardless.
    text_rank_cap: int = 500
    stopwords: frozenset[str] = field(default=STOPWORDS)
    #: Episode excerpts are cut at this many characters.
    excerpt_chars: int = 300
    #: HNSW search breadth for the vector arm, with pgvector 0.8 iterative scans so that a
    #: scope that is a small slice of the table still yields ``top_k`` in-scope rows. The
    #: breadth is the row count of the graph searched (the scope's own graph when it has one,
    #: ``haki.db.scope_indexes``, else the table's) / ``hnsw_rows_per_ef``, clamped to
    #: [min, max]: measured on synthetic clustered vectors (docs/benchmarks.md), 100 keeps
    #: the true top 64 at ≥ 0.97 in tables up to 100k facts; in a 1M-fact table a scope of
    #: all of it needs ~1000 (0.97; 100 gives 0.76) and a subject holding 5% of it ~500 or
    #: more (1000: 0.96) — unless it has a scope graph, searched at its own size.
    hnsw_ef_search_min: int = 100
    hnsw_ef_search_max: int = 1000
    hnsw_rows_per_ef: int = 1000
    hnsw_max_scan_tuples: int = 20_000
    #: Recall floor (``HAKI_RECALL_MAX_DISTANCE``): a ranked fact or episode whose cosine
    #: distance exceeds it is excluded ``below_relevance_floor``; 0 turns the floor off.
    recall_max_distance: float = 0.0
    #: Volatility horizons (``HAKI_VOLATILITY_HORIZON_*_DAYS``): days without reinforcement
    #: after which a ``slow`` fact is flagged unconfirmed and a volatile / ephemeral one dropped.
    volatility_horizon_slow_days: float = 365.0
    volatility_horizon_volatile_days: float = 60.0
    volatility_horizon_ephemeral_days: float = 7.0
    #: ``two_phase`` (production): the top ``top_k`` of each index arm, then the full score
    #: on their union. ``exhaustive``: the design page's naive baseline, every active fact of
    #: the scope scored — what the benchmarks compare against, never used to serve.
    fact_candidates: CandidateStrategy = "two_phase"
    #: Ablation switches (all on in production). Recency and multi-hop are parts of ``seed``
    #: only, neighbours of ``fused`` only; ``use_episodes`` off leaves facts alone in both.
    use_vector_arm: bool = True
    use_text_arm: bool = True
    use_recency: bool = True
    use_multi_hop: bool = True
    use_episodes: bool = True
    use_neighbours: bool = True
    #: Fused: the nearest facts run on a second connection of the database handle
    #: (``Database.sibling``), in parallel with the nearest events (``HAKI_PARALLEL_ARMS``).
    #: The same rows either way; it changes what the call waits for, not what it finds.
    parallel_arms: bool = True
    #: Whether the call waits for its trace's WAL flush (``HAKI_TRACE_DURABLE_COMMIT``).
    trace_durable_commit: bool = False

    def vector_depth(self, budget_tokens: int) -> int:
        """How many nearest candidates the vector arm ranks for a packet of ``budget_tokens``:
        96 up to 1,500 tokens, 128 at 2,000, 256 from 4,000 (the defaults)."""
        wanted = math.ceil(budget_tokens * self.vector_depth_per_token)
        return min(self.vector_top_k, max(self.vector_top_k_min, wanted))

    @classmethod
    def from_settings(cls, settings: Settings, base: "RetrievalConfig | None" = None
                      ) -> "RetrievalConfig":
        """``base`` (default: the preset ``HAKI_RANKING`` names) with the knobs the environment
        sets."""
        return replace(
            base or PRESETS[settings.ranking],
            recall_max_distance=settings.recall_max_distance,
            volatility_horizon_slow_days=settings.volatility_horizon_slow_days,
            volatility_horizon_volatile_days=settings.volatility_horizon_volatile_days,
            volatility_horizon_ephemeral_days=settings.volatility_horizon_ephemeral_days,
            parallel_arms=settings.parallel_arms,
            trace_durable_commit=settings.trace_durable_commit,
        )


#: The named presets. ``seed`` keeps the design page's excerpt ("kind: text").
PRESETS: dict[Ranking, RetrievalConfig] = {
    "fused": RetrievalConfig(),
    "seed": RetrievalConfig(ranking="seed", excerpt_with_kind=True),
}
DEFAULT_CONFIG = PRESETS["fused"]
SEED_CONFIG = PRESETS["seed"]
