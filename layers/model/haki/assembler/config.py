"""Every retrieval knob of the assembler, in one frozen object with documented defaults.

Facts and episodes share one candidate list under one budget, ordered by a reciprocal-rank
fusion of a vector arm and an idf-weighted full-text arm over both, with the neighbouring
turns of the best episodes propagated (``fusion.py``). Each part is there because switching it
off cost recall on the dev sets (``haki eval`` reports every ablation; the decision records in
docs/decisions/ hold the figures).

The weights are documented here but are not part of the public API contract: they may change
between versions. The arm switches exist for ablation studies (``haki eval``); production runs
with the defaults and the few knobs the environment sets (:meth:`RetrievalConfig.from_settings`).
"""

import math
from dataclasses import dataclass, field, replace
from functools import cached_property

from haki.settings import Settings

#: Words that carry no meaning for the full-text arm, English and French: without them "the",
#: "de" or "is" would match nearly every row of a scope.
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

    #: Vector arm: the nearest facts and the nearest events of the scope (each by its HNSW
    #: index), merged by cosine distance, the best ``depth`` kept and ranked. The depth follows
    #: the call's budget (:meth:`vector_depth`): a small packet holds a few dozen items, so a
    #: deep list only costs time, while a large one needs more candidates to fill it. The floor
    #: keeps the scan within one pass of the HNSW search breadth.
    vector_top_k: int = 256
    vector_top_k_min: int = 96
    vector_depth_per_token: float = 0.064
    #: Text arm: the best ``text_top_k`` facts and events by the sum of BM25's idf over the
    #: query terms they hold (``haki_idf_search``); deeper, the arm adds more noise than
    #: evidence.
    text_top_k: int = 32
    #: Text-arm candidates: the rows holding the query's rarest terms, taken while their
    #: document frequencies add up to at most this, then scored on every term. Bounds the arm's
    #: work on a scope of any size.
    text_candidates: int = 100
    #: At most this many distinct query terms, longest first (bounds huge queries).
    max_query_terms: int = 32
    stopwords: frozenset[str] = field(default=STOPWORDS)
    #: Reciprocal-rank fusion: score = Σ_arm weight / (rrf_k + rank). The vector arm counts
    #: double.
    rrf_k: float = 30.0
    rrf_weight_vector: float = 2.0
    rrf_weight_text: float = 1.0
    #: Neighbour propagation: each of the ``neighbour_sources`` best episodes passes
    #: ``neighbour_share`` × its score, divided by the distance in turns, to the events up to
    #: ``neighbour_span`` turns before and after it (same scope, by ``occurred_at``) — a reply
    #: often carries the evidence its question lacks.
    neighbour_share: float = 0.3
    neighbour_span: int = 2
    neighbour_sources: int = 8
    #: Speaker weight: a message the assistant wrote (payload ``role`` ``assistant``) counts
    #: this share of its score. In a user–assistant chat what the memory holds about the
    #: subject is mostly what the user said; the assistant's replies elaborate on it, are long,
    #: and would otherwise fill the budget with near-misses.
    assistant_weight: float = 0.6
    #: Sessions: every episode gains this share of the best score among the candidate
    #: episodes of its session (its thread and UTC day, the block's group); a fact gains it of
    #: its own score. The conversation that answers a question rises with its best turn.
    session_share: float = 0.35
    #: Episode excerpts are cut at this many characters; they carry the payload text only (the
    #: packet already has the ``kind``).
    excerpt_chars: int = 300
    excerpt_with_kind: bool = False
    #: HNSW search breadth (pgvector 0.8 iterative scans, so a scope that is a small slice of
    #: the table still yields its rows): the row count of the graph searched (the scope's own
    #: graph when it has one, ``haki.db.scope_indexes``, else the table's) / ``rows_per_ef``,
    #: clamped to [min, max]. A larger graph needs a wider search to keep recall.
    hnsw_ef_search_min: int = 100
    hnsw_ef_search_max: int = 1000
    hnsw_rows_per_ef: int = 1000
    #: The most tuples one graph search visits; a search left short by it (a slice of a large
    #: graph, far from the question) is completed by an exact read of at most this many rows
    #: of the scope, so the arm is never left short while its scope holds rows.
    hnsw_max_scan_tuples: int = 20_000
    #: A vector arm whose scope is a slice of the graph it searches (the search's first batch,
    #: ``ef_search`` rows of the graph, is not expected to hold ``depth`` rows of the scope)
    #: reads at least this many rows and keeps the nearest ``depth`` exactly: past its first
    #: batch a relaxed iterative scan returns rows in the order it finds them, not nearest
    #: first (docs/decisions/2026-12-05-vector-arm-short-results.md).
    vector_scan_rows: int = 288
    #: Recall floor (``HAKI_RECALL_MAX_DISTANCE``): a ranked fact or episode whose cosine
    #: distance exceeds it is excluded ``below_relevance_floor``; 0 turns the floor off.
    recall_max_distance: float = 0.0
    #: Volatility horizons (``HAKI_VOLATILITY_HORIZON_*_DAYS``): days without reinforcement
    #: after which a ``slow`` fact is flagged unconfirmed and a volatile / ephemeral one dropped.
    volatility_horizon_slow_days: float = 365.0
    volatility_horizon_volatile_days: float = 60.0
    volatility_horizon_ephemeral_days: float = 7.0
    #: Ablation switches (all on in production); ``use_episodes`` off leaves facts alone.
    use_vector_arm: bool = True
    use_text_arm: bool = True
    use_episodes: bool = True
    use_neighbours: bool = True
    #: Whether the call waits for its trace's WAL flush (``HAKI_TRACE_DURABLE_COMMIT``).
    trace_durable_commit: bool = False

    @cached_property
    def stopword_list(self) -> list[str]:
        """The stop words as the text arm's array parameter, sorted once per configuration."""
        return sorted(self.stopwords)

    def below_floor(self, distance: float) -> bool:
        """Whether the recall floor, when on, excludes a candidate at ``distance``."""
        return 0 < self.recall_max_distance < distance

    def vector_depth(self, budget_tokens: int) -> int:
        """How many nearest candidates the vector arm ranks for a packet of ``budget_tokens``:
        96 up to 1,500 tokens, 128 at 2,000, 256 from 4,000 (the defaults)."""
        wanted = math.ceil(budget_tokens * self.vector_depth_per_token)
        return min(self.vector_top_k, max(self.vector_top_k_min, wanted))

    @classmethod
    def from_settings(cls, settings: Settings, base: "RetrievalConfig | None" = None
                      ) -> "RetrievalConfig":
        """``base`` (default: the defaults) with the knobs the environment sets."""
        return replace(
            base or cls(),
            recall_max_distance=settings.recall_max_distance,
            volatility_horizon_slow_days=settings.volatility_horizon_slow_days,
            volatility_horizon_volatile_days=settings.volatility_horizon_volatile_days,
            volatility_horizon_ephemeral_days=settings.volatility_horizon_ephemeral_days,
            trace_durable_commit=settings.trace_durable_commit,
        )


DEFAULT_CONFIG = RetrievalConfig()
