"""The assembler's SQL, in one place. Every statement filters on the exact scope first.

Statements per context call (see ``retrieval.py``), inside one transaction, besides the scope
setting and the trace write:
- ``fused`` (default): the text arm with the turns around its episodes (sent while the
  question is embedded, its results taken in once the vector is ready: the first round
  trip), then the nearest facts (on the second connection, see ``retrieval.py``) and the
  nearest events with the turns around the nearest few, each after its graph's breadth, in
  one round trip. Each is sent as a call of its PL/pgSQL function (``routines.py``, which
  renders the functions from the statements here), whose plans the connection caches — 5
  statements in all with the scope and the trace;
- ``seed``: planner settings, phase 1 + phase 2 for facts and the nearest episodes in one
  pipelined round trip, then an optional multi-hop statement — 6 at most.

Indexes relied upon (migrations):
- ``facts_embedding_hnsw`` / ``events_embedding_hnsw`` (0002): ``ORDER BY embedding <=> q LIMIT k``;
- ``facts_search_vector_gin`` (0004), ``events_search_vector_gin`` (0011): ``search_vector @@ q``
  inside ``haki_text_search`` (0008) and ``haki_idf_search`` (0011, redefined by 0015);
- ``text_scope_stats`` / ``text_term_stats`` primary keys (0011): the idf statistics;
- ``facts_scope_idx`` / ``events_scope_idx`` (0002): the scope filter, and the exact scan the
  planner prefers when a scope is small (``facts_scope_stats`` keeps its estimate honest);
  ``events_scope_idx`` (project, subject, occurred_at) also orders the neighbouring turns;
- ``conflict_sets_open_idx`` (0003): the open-conflict lookup.
"""

from haki.assembler.config import CandidateStrategy


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


#: The facts' graph sets the breadth of a search over it (the seed's facts statement, the fused
#: ranking's nearest facts; the seed's episode arm takes 8 rows only).
PLANNER_SETTINGS = _planner_settings("facts")
#: Fused: the events' graph sets the breadth of the nearest events, set between the two
#: statements. One breadth for both, set by the larger graph, searched the 200k events of a
#: 1M-fact benchmark table at ef 1,000: 10.5 ms p50 against 3.3 ms at ef 200 (recall of the
#: 128 nearest 0.998 and 0.970: ef 200 is the rule's value for a graph of that size).
EVENTS_PLANNER_SETTINGS = _planner_settings("events")

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


#: FACT_COLUMNS for a row that is no fact (a neighbouring turn beside the text arm's rows):
#: the same columns, in the same order, NULL.
FACT_COLUMNS_ABSENT = """
    NULL::text, NULL::jsonb, NULL::real, NULL::timestamptz, NULL::uuid[], NULL::text,
    NULL::boolean, NULL::boolean"""


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
#: ``text_rank_cap`` holding any term: ``ts_rank_cd`` costs ~7 µs a row (measured), and an
#: ORed common term can match a large share of a big scope. Below the cap the ranking is exact;
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

#: The fact-candidates statement of each ``RetrievalConfig.fact_candidates`` strategy (same
#: parameters, same columns).
FACT_CANDIDATES: dict[CandidateStrategy, str] = {
    "two_phase": TWO_PHASE_FACT_CANDIDATES,
    "exhaustive": EXHAUSTIVE_FACT_CANDIDATES,
}

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


# --------------------------------------------------------------------------- fused ranking


def excerpt_payload(alias: str) -> str:
    """Event ``alias``'s payload as the packer needs it: a text payload cut to the excerpt's
    length (a pasted log can be hundreds of KB; only ``excerpt_chars`` are ever served), any
    other payload whole."""
    return f"""CASE WHEN jsonb_typeof({alias}.payload -> 'text') = 'string'
         THEN jsonb_build_object('text', left({alias}.payload ->> 'text', %(excerpt_chars)s))
         ELSE {alias}.payload END"""


#: The question's terms (QUERY_TERMS) as one array, for ``haki_idf_search``.
TERMS_CTE = f"""
terms AS (
    SELECT array_agg(term) AS terms
    FROM ({QUERY_TERMS}) AS kept
)
"""


def neighbours_of(sources: str) -> str:
    """The ``neighbour_span`` events before and after each event of ``sources`` (an SQL
    relation with an ``id`` column) in the scope, in ``occurred_at`` order, ties by id
    (``events_scope_idx``): ``FROM`` … ``WHERE`` over ``source`` (the source event) and
    ``near`` (the neighbour, with its ``step``: the offset in turns, negative before)."""
    return f"""
events AS source
CROSS JOIN LATERAL (
    SELECT earlier.*, -row_number() OVER (ORDER BY earlier.occurred_at DESC, earlier.id DESC)
           AS step
    FROM (SELECT e.id, e.kind, e.payload, e.occurred_at, e.embedding
          FROM events AS e
          WHERE e.project_id = source.project_id AND e.subject_id = source.subject_id
            AND e.occurred_at <= source.occurred_at
            AND (e.occurred_at < source.occurred_at OR e.id < source.id)
          ORDER BY e.occurred_at DESC, e.id DESC
          LIMIT %(neighbour_span)s) AS earlier
    UNION ALL
    SELECT later.*, row_number() OVER (ORDER BY later.occurred_at, later.id)
    FROM (SELECT e.id, e.kind, e.payload, e.occurred_at, e.embedding
          FROM events AS e
          WHERE e.project_id = source.project_id AND e.subject_id = source.subject_id
            AND e.occurred_at >= source.occurred_at
            AND (e.occurred_at > source.occurred_at OR e.id > source.id)
          ORDER BY e.occurred_at, e.id
          LIMIT %(neighbour_span)s) AS later
) AS near
WHERE %(use_neighbours)s AND source.id IN (SELECT id FROM {sources})
  AND source.project_id = %(project_id)s AND source.subject_id = %(subject_id)s"""


#: The fused ranking's two arms over facts and events; the fusion is ``fusion.py``'s, which
#: joins their rows by (item, id).
#: Text arm: ``haki_idf_search`` (0015), the BM25 idf of the query terms a row holds, over
#: the scope's active facts and events pooled, statistics kept on write, the best
#: ``text_top_k`` ranked. It needs no query vector, so the assembler sends it, pipelined with
#: BEGIN, the scope and the planner settings, while the question is still being embedded; each
#: row brings its stored embedding instead of a distance (the recall floor gates text-arm rows
#: too), which the assembler compares with the query vector once it has it.
#: Neighbour sources: the fusion (in Python, after the vector arm) picks the
#: ``neighbour_sources`` best episodes, whose turns around them it raises. Which episodes can
#: be one: an episode that only the vector arm returned ranks below every nearer event, each
#: of which scores more (the reciprocal rank falls with the rank) and passes the recall floor
#: if it does, so it is a source only if it is one of the ``neighbour_sources`` nearest
#: events (``NEAREST_EVENTS`` brings their turns); every other candidate episode is a row of
#: this arm, whose turns come with it (``item`` 'neighbour', ``source_id``, ``step``; their
#: embedding, the query vector not being known yet; without the payload when the turn is a
#: row of the arm itself). So the turns of any source the fusion picks are at hand without a
#: round trip after it, and this part runs while the question is embedded; the assembler
#: keeps the links of the sources picked (``retrieval.Neighbourhood``).
TEXT_ARM_CANDIDATES = f"""
WITH {TERMS_CTE},
arm AS MATERIALIZED (
    SELECT hit.item, hit.id, hit.score AS text_rank,
           row_number() OVER (ORDER BY hit.score DESC, hit.id) AS text_arm_rank
    FROM terms
    CROSS JOIN LATERAL haki_idf_search(
        %(subject_id)s, terms.terms, %(use_episodes)s, %(text_candidates)s, %(text_top_k)s)
        AS hit
    WHERE %(use_text_arm)s
),
sources AS (SELECT a.id FROM arm AS a WHERE a.item = 'event')
SELECT a.item, a.id, a.text_arm_rank, a.text_rank,
       CASE a.item WHEN 'fact' THEN f.embedding ELSE e.embedding END AS embedding,
       {FACT_COLUMNS},
       e.kind, {excerpt_payload("e")} AS payload, e.occurred_at,
       NULL::uuid AS source_id, NULL::bigint AS step
FROM arm AS a
LEFT JOIN facts AS f ON a.item = 'fact' AND f.id = a.id
LEFT JOIN events AS e ON a.item = 'event' AND e.id = a.id
UNION ALL
SELECT 'neighbour', near.id, NULL, NULL, near.embedding, {FACT_COLUMNS_ABSENT},
       near.kind,
       CASE WHEN near.id IN (SELECT id FROM sources) THEN NULL
            ELSE {excerpt_payload("near")} END,
       near.occurred_at, source.id, near.step
FROM {neighbours_of("sources")}
"""

#: Vector arm: the nearest ``vector_top_k`` active facts (FACT_SCOPE; the call's depth, which
#: follows its budget: ``RetrievalConfig.vector_depth``) and as many events of
#: the scope, one statement each, each by its HNSW index (or an exact scan of a small scope)
#: after the planner settings of its own graph; ``retrieval.py`` merges them by distance and
#: keeps the best ``vector_top_k``. The nearest ids and distances first (MATERIALIZED: an
#: exact scan of a small scope computes nothing else for the rows it sorts; selecting the
#: columns in the scan itself made the exact scan of a subject's 10,000 events 23 → 38 ms),
#: then each row's columns from its own table only (one statement for both kinds probed both
#: primary keys for every row), fetched by the row's ``ctid``: a TID scan instead of a
#: primary-key descent per row, the same rows (the CTE and the join read one snapshot, which
#: keeps the version the CTE saw in place), 0.3–1.0 ms less per arm in every benchmark
#: scenario (docs/benchmarks.md). An ablation sets an arm's switch to false, which the
#: planner folds into a one-time filter.
NEAREST_FACTS = f"""
WITH nearest AS MATERIALIZED (
    SELECT f.ctid, f.id, (f.embedding <=> %(query_vector)s)::float8 AS distance
    FROM facts AS f
    WHERE %(use_vector_arm)s AND {FACT_SCOPE}
    ORDER BY f.embedding <=> %(query_vector)s
    LIMIT %(vector_top_k)s
)
SELECT 'fact'::text AS item, n.id, n.distance, {FACT_COLUMNS}
FROM nearest AS n
JOIN facts AS f ON f.ctid = n.ctid
"""

#: Nearest events (as the nearest facts), with the turns around the ``neighbour_sources``
#: nearest of them (the vector arm's possible neighbour sources, see TEXT_ARM_CANDIDATES):
#: rows with ``item`` 'event' (``source_id``/``step`` NULL) or 'neighbour' (its distance;
#: without the payload when the row is a nearest event, which the assembler has already).
#: It needs nothing from the text arm, so it leaves as soon as the vector is ready.
NEAREST_EVENTS = f"""
WITH nearest AS MATERIALIZED (
    SELECT e.ctid, e.id, (e.embedding <=> %(query_vector)s)::float8 AS distance
    FROM events AS e
    WHERE %(use_vector_arm)s AND %(use_episodes)s
      AND e.project_id = %(project_id)s AND e.subject_id = %(subject_id)s
    ORDER BY e.embedding <=> %(query_vector)s
    LIMIT %(vector_top_k)s
),
sources AS (
    SELECT n.id FROM nearest AS n ORDER BY n.distance, n.id LIMIT %(neighbour_sources)s
)
SELECT 'event'::text AS item, n.id, n.distance, e.kind, {excerpt_payload("e")} AS payload,
       e.occurred_at, NULL::uuid AS source_id, NULL::bigint AS step
FROM nearest AS n
JOIN events AS e ON e.ctid = n.ctid
UNION ALL
SELECT 'neighbour', near.id, (near.embedding <=> %(query_vector)s)::float8, near.kind,
       CASE WHEN near.id IN (SELECT n.id FROM nearest AS n) THEN NULL
            ELSE {excerpt_payload("near")} END,
       near.occurred_at, source.id, near.step
FROM {neighbours_of("sources")}
"""
