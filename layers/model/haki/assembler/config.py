"""Every retrieval knob, in one frozen object with documented defaults.

The weights are documented here but are not part of the public API contract: they may change
between versions. The arm switches exist for ablation studies (``haki eval``) and the
candidate strategy for the benchmarks' naive baseline; production runs with the defaults and
the few knobs the environment sets (:meth:`RetrievalConfig.from_settings`).
"""

from dataclasses import dataclass, field, replace
from typing import Literal

from haki.settings import Settings

#: Where fact candidates come from (see ``sql.fact_candidates``).
CandidateStrategy = Literal["two_phase", "exhaustive"]

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
    excerpt_chars: int = 300
    #: Multi-hop: at most this many entities, this many facts each, one hop.
    multi_hop_max_entities: int = 2
    multi_hop_max_per_entity: int = 5
    #: Full-text arm: at most this many distinct query terms are ORed (bounds huge queries).
    max_query_terms: int = 32
    #: Full-text arm and multi-hop: at most this many matching rows are ranked by ts_rank_cd
    #: (~7 µs a row), for facts holding all the question's terms and again for facts holding
    #: any. Exact wherever the terms match fewer facts; past it, the any-term side ranks the
    #: first matches found — a term that common carries little signal, the all-terms side
    #: still brings the precise matches, and the vector arm covers the scope regardless.
    text_rank_cap: int = 500
    stopwords: frozenset[str] = field(default=STOPWORDS)
    #: HNSW search breadth for the vector arm, with pgvector 0.8 iterative scans so that a
    #: scope that is a small slice of the table still yields ``top_k`` in-scope rows. The
    #: breadth is the table's row count / ``hnsw_rows_per_ef``, clamped to [min, max]: measured
    #: on synthetic clustered vectors (docs/benchmarks.md), 100 keeps the true top 64 at
    #: ≥ 0.97 in tables up to 100k facts; in a 1M-fact table a scope of all of it needs ~1000
    #: (0.97; 100 gives 0.76) and a subject holding 5% of it ~500 or more (1000: 0.96).
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
    #: Ablation switches (all on in production).
    use_vector_arm: bool = True
    use_text_arm: bool = True
    use_recency: bool = True
    use_multi_hop: bool = True
    use_episodes: bool = True

    @classmethod
    def from_settings(cls, settings: Settings, base: "RetrievalConfig | None" = None
                      ) -> "RetrievalConfig":
        """``base`` (default: the production values) with the knobs the environment sets."""
        return replace(
            base or cls(),
            recall_max_distance=settings.recall_max_distance,
            volatility_horizon_slow_days=settings.volatility_horizon_slow_days,
            volatility_horizon_volatile_days=settings.volatility_horizon_volatile_days,
            volatility_horizon_ephemeral_days=settings.volatility_horizon_ephemeral_days,
        )


DEFAULT_CONFIG = RetrievalConfig()
