-- Threads, and a conversation in the order it was said.
--
-- 1. events.thread_id: the conversation thread an event belongs to (optional, the same rules as
--    subject_id). A context call may narrow its episodes to one thread; the turns around an
--    episode are those of its own thread.
-- 2. events.seq: the order events were written, one number per event. The messages of one
--    batch often share a time (the server's, when they give none); (occurred_at, seq) is the
--    order they were said, everywhere: the packet, the listing, the turns around an episode.
--    An identity column: the runtime role needs no grant on its sequence.
-- 3. events_scope_idx gains seq, so a scope's events are read in that order by the index (the
--    listing's keyset, the turns around an episode).
-- 4. The three functions that read events take p_thread_id (NULL: every thread) and the two
--    candidate functions return each event's thread_id and seq; a new argument and new result
--    columns need DROP and CREATE. Bodies otherwise as defined by 0015 (haki_idf_search) and
--    0017 with 0019's excerpt (haki_text_arm, haki_nearest_events).

ALTER TABLE events
    ADD COLUMN thread_id text CHECK (char_length(thread_id) BETWEEN 1 AND 128),
    ADD COLUMN seq bigint GENERATED ALWAYS AS IDENTITY;

DROP INDEX events_scope_idx;
CREATE INDEX events_scope_idx ON events (project_id, subject_id, occurred_at, seq);

DROP FUNCTION haki_text_arm(text, text[], integer, text, boolean, integer, integer, boolean, double precision, double precision, double precision, integer, integer, boolean, text);
DROP FUNCTION haki_nearest_events(integer, integer, text, integer, text, vector, boolean, boolean, text, text, integer, integer, integer, integer, boolean);
DROP FUNCTION haki_idf_search(text, text[], boolean, integer, integer);

CREATE FUNCTION haki_idf_search(
    p_subject_id text, p_terms text[], p_with_events boolean, p_candidates integer,
    p_limit integer, p_thread_id text)
RETURNS TABLE(item text, id uuid, score double precision)
LANGUAGE plpgsql
STABLE SECURITY DEFINER ROWS 32
SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $$
DECLARE
    -- The tenant boundary, applied here because the function runs as the owner (0013).
    v_project text := haki_tenant();
    v_docs bigint;
    v_terms text[];
    v_idf float8[];
    v_seek tsquery;
BEGIN
    IF v_project IS NULL OR coalesce(cardinality(p_terms), 0) = 0 THEN
        RETURN;
    END IF;
    -- N: text_scope_stats primary key.
    SELECT s.fact_docs + CASE WHEN p_with_events THEN s.event_docs ELSE 0 END INTO v_docs
    FROM text_scope_stats AS s
    WHERE s.project_id = v_project AND s.subject_id = p_subject_id;
    IF coalesce(v_docs, 0) = 0 THEN
        RETURN;
    END IF;
    -- The query's terms the scope holds (text_term_stats primary key), rarest first, their
    -- idf, and the OR of those that seek the candidates.
    SELECT array_agg(known.term ORDER BY known.df, known.term),
           array_agg(ln(1 + (v_docs - known.df + 0.5)::float8 / (known.df + 0.5))
                     ORDER BY known.df, known.term),
           tsquery_or_agg(plainto_tsquery('simple', known.term) ORDER BY known.df, known.term)
               FILTER (WHERE known.position = 1 OR known.running <= p_candidates)
    INTO v_terms, v_idf, v_seek
    FROM (
        SELECT t.term, df.n AS df,
               sum(df.n) OVER (ORDER BY df.n, t.term) AS running,
               row_number() OVER (ORDER BY df.n, t.term) AS position
        FROM text_term_stats AS t
        CROSS JOIN LATERAL (SELECT t.fact_docs + CASE WHEN p_with_events THEN t.event_docs
                                                      ELSE 0 END AS n) AS df
        WHERE t.project_id = v_project AND t.subject_id = p_subject_id
          AND t.term = ANY (p_terms) AND df.n > 0
    ) AS known;
    IF v_terms IS NULL THEN
        RETURN;
    END IF;
    -- EXECUTE: a one-shot plan with the actual values, as in haki_text_search (0008).
    RETURN QUERY EXECUTE $sql$
        WITH terms AS (
            SELECT plainto_tsquery('simple', t.term) AS q, t.idf
            FROM unnest($4::text[], $5::float8[]) AS t(term, idf)
        ),
        matched AS (
            (SELECT 'fact'::text AS item, f.id, f.search_vector AS v
             FROM facts AS f
             WHERE f.project_id = $1 AND f.subject_id = $2
               AND f.status = 'active' AND (f.valid_to IS NULL OR f.valid_to > now())
               AND f.search_vector @@ $6
             LIMIT $7)
            UNION ALL
            (SELECT 'event'::text, e.id, e.search_vector
             FROM events AS e
             WHERE $3 AND e.project_id = $1 AND e.subject_id = $2 AND e.search_vector @@ $6
               AND ($9::text IS NULL OR e.thread_id = $9)
             LIMIT $7)
        )
        SELECT m.item, m.id, sum(t.idf) FILTER (WHERE m.v @@ t.q)
        FROM matched AS m
        CROSS JOIN terms AS t
        GROUP BY m.item, m.id
        ORDER BY 3 DESC, m.id
        LIMIT $8
    $sql$ USING v_project, p_subject_id, p_with_events, v_terms, v_idf, v_seek, p_candidates,
                p_limit, p_thread_id;
END$$;
REVOKE ALL ON FUNCTION haki_idf_search(text, text[], boolean, integer, integer, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION haki_idf_search(text, text[], boolean, integer, integer, text) TO haki_app;

CREATE FUNCTION haki_text_arm(
    p_query text, p_stopwords text[], p_max_terms integer, p_subject_id text,
    p_use_episodes boolean, p_text_candidates integer, p_text_top_k integer,
    p_use_text_arm boolean, p_horizon_slow_seconds double precision,
    p_horizon_volatile_seconds double precision, p_horizon_ephemeral_seconds double precision,
    p_excerpt_chars integer, p_neighbour_span integer, p_use_neighbours boolean,
    p_project_id text, p_thread_id text)
RETURNS TABLE(item text, id uuid, text_arm_rank bigint, text_rank double precision, embedding vector, predicate text, value jsonb, confidence real, valid_from timestamp with time zone, source_event_ids uuid[], volatility text, conflict_open boolean, horizon_passed boolean, kind text, payload jsonb, occurred_at timestamp with time zone, source_id uuid, step bigint, thread_id text, seq bigint)
LANGUAGE plpgsql
SET plan_cache_mode TO 'force_generic_plan'
SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
WITH 
terms AS (
    SELECT array_agg(term) AS terms
    FROM (
        SELECT term
        FROM unnest(tsvector_to_array(to_tsvector('simple', p_query))) AS term
        WHERE char_length(term) > 1 AND NOT (term = ANY (p_stopwords))
        ORDER BY char_length(term) DESC, term
        LIMIT p_max_terms) AS kept
)
,
arm AS MATERIALIZED (
    SELECT hit.item, hit.id, hit.score AS text_rank,
           row_number() OVER (ORDER BY hit.score DESC, hit.id) AS text_arm_rank
    FROM terms
    CROSS JOIN LATERAL haki_idf_search(
        p_subject_id, terms.terms, p_use_episodes, p_text_candidates, p_text_top_k,
        p_thread_id)
        AS hit
    WHERE p_use_text_arm AND NOT EXISTS (SELECT 1 FROM disabled_subjects AS d
                    WHERE d.project_id = p_project_id AND d.subject_id = p_subject_id)
),
sources AS (SELECT a.id FROM arm AS a WHERE a.item = 'event')
SELECT a.item, a.id, a.text_arm_rank, a.text_rank,
       CASE a.item WHEN 'fact' THEN f.embedding ELSE e.embedding END AS embedding,
       
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
                   WHEN 'slow' THEN p_horizon_slow_seconds
                   WHEN 'volatile' THEN p_horizon_volatile_seconds
                   ELSE p_horizon_ephemeral_seconds END) < now()
    END AS horizon_passed,
       e.kind, haki_episode_excerpt(e.payload, p_excerpt_chars) AS payload, e.occurred_at,
       NULL::uuid AS source_id, NULL::bigint AS step, e.thread_id, e.seq
FROM arm AS a
LEFT JOIN facts AS f ON a.item = 'fact' AND f.id = a.id
LEFT JOIN events AS e ON a.item = 'event' AND e.project_id = p_project_id AND e.id = a.id
UNION ALL
SELECT 'subject_disabled', NULL::uuid, NULL::bigint, NULL::float8, NULL::vector, NULL::text,
       NULL::jsonb, NULL::real, NULL::timestamptz, NULL::uuid[], NULL::text, NULL::boolean,
       NULL::boolean, NULL::text, NULL::jsonb, NULL::timestamptz, NULL::uuid, NULL::bigint,
       NULL::text, NULL::bigint
WHERE EXISTS (SELECT 1 FROM disabled_subjects AS d
              WHERE d.project_id = p_project_id AND d.subject_id = p_subject_id)
UNION ALL
SELECT 'neighbour', near.id, NULL, NULL, near.embedding, 
    NULL::text, NULL::jsonb, NULL::real, NULL::timestamptz, NULL::uuid[], NULL::text,
    NULL::boolean, NULL::boolean,
       near.kind,
       CASE WHEN near.id IN (SELECT id FROM sources) THEN NULL
            ELSE haki_episode_excerpt(near.payload, p_excerpt_chars) END,
       near.occurred_at, source.id, near.step, near.thread_id, near.seq
FROM 
events AS source
CROSS JOIN LATERAL (
    SELECT earlier.*, -row_number() OVER (ORDER BY earlier.occurred_at DESC, earlier.seq DESC)
           AS step
    FROM (SELECT e.id, e.kind, e.payload, e.occurred_at, e.embedding, e.thread_id, e.seq
          FROM events AS e
          WHERE e.project_id = source.project_id AND e.subject_id = source.subject_id
            AND e.thread_id IS NOT DISTINCT FROM source.thread_id
            AND e.occurred_at <= source.occurred_at
            AND (e.occurred_at < source.occurred_at OR e.seq < source.seq)
          ORDER BY e.occurred_at DESC, e.seq DESC
          LIMIT p_neighbour_span) AS earlier
    UNION ALL
    SELECT later.*, row_number() OVER (ORDER BY later.occurred_at, later.seq)
    FROM (SELECT e.id, e.kind, e.payload, e.occurred_at, e.embedding, e.thread_id, e.seq
          FROM events AS e
          WHERE e.project_id = source.project_id AND e.subject_id = source.subject_id
            AND e.thread_id IS NOT DISTINCT FROM source.thread_id
            AND e.occurred_at >= source.occurred_at
            AND (e.occurred_at > source.occurred_at OR e.seq > source.seq)
          ORDER BY e.occurred_at, e.seq
          LIMIT p_neighbour_span) AS later
) AS near
WHERE p_use_neighbours AND source.id IN (SELECT id FROM sources)
  AND source.project_id = p_project_id AND source.subject_id = p_subject_id;
END$$;
REVOKE ALL ON FUNCTION haki_text_arm(text, text[], integer, text, boolean, integer, integer, boolean, double precision, double precision, double precision, integer, integer, boolean, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION haki_text_arm(text, text[], integer, text, boolean, integer, integer, boolean, double precision, double precision, double precision, integer, integer, boolean, text, text) TO haki_app;

CREATE FUNCTION haki_nearest_events(
    p_ef_search_max integer, p_ef_search_min integer, p_events_graph text,
    p_rows_per_ef integer, p_max_scan_tuples text, p_query_vector vector,
    p_use_vector_arm boolean, p_use_episodes boolean, p_project_id text, p_subject_id text,
    p_vector_top_k integer, p_neighbour_sources integer, p_excerpt_chars integer,
    p_neighbour_span integer, p_use_neighbours boolean, p_thread_id text)
RETURNS TABLE(item text, id uuid, distance double precision, kind text, payload jsonb, occurred_at timestamp with time zone, source_id uuid, step bigint, thread_id text, seq bigint)
LANGUAGE plpgsql
SET plan_cache_mode TO 'force_custom_plan'
SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $$
#variable_conflict use_column
BEGIN
    PERFORM set_config('hnsw.iterative_scan', 'relaxed_order', true),
       set_config('hnsw.ef_search',
                  least(p_ef_search_max, greatest(p_ef_search_min,
                        coalesce((SELECT c.reltuples
                                  FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid
                                  WHERE i.indexrelid = to_regclass(p_events_graph)
                                    AND i.indrelid = 'events'::regclass AND i.indisvalid
                                    AND c.reltuples >= 0),
                                 (SELECT reltuples FROM pg_class
                                  WHERE oid = 'events'::regclass))
                        / p_rows_per_ef))::int::text,
                  true),
       set_config('hnsw.max_scan_tuples', p_max_scan_tuples, true);
    RETURN QUERY
WITH nearest AS MATERIALIZED (
    SELECT e.ctid, e.id, (e.embedding <=> p_query_vector)::float8 AS distance
    FROM events AS e
    WHERE p_use_vector_arm AND p_use_episodes
      AND e.project_id = p_project_id AND e.subject_id = p_subject_id
      AND (p_thread_id IS NULL OR e.thread_id = p_thread_id)
      AND NOT EXISTS (SELECT 1 FROM disabled_subjects AS d
                  WHERE d.project_id = p_project_id AND d.subject_id = p_subject_id)
    ORDER BY e.embedding <=> p_query_vector
    LIMIT p_vector_top_k
),
sources AS (
    SELECT n.id FROM nearest AS n ORDER BY n.distance, n.id LIMIT p_neighbour_sources
)
SELECT 'event'::text AS item, n.id, n.distance, e.kind,
       haki_episode_excerpt(e.payload, p_excerpt_chars) AS payload,
       e.occurred_at, NULL::uuid AS source_id, NULL::bigint AS step, e.thread_id, e.seq
FROM nearest AS n
JOIN events AS e ON e.ctid = n.ctid
UNION ALL
SELECT 'neighbour', near.id, (near.embedding <=> p_query_vector)::float8, near.kind,
       CASE WHEN near.id IN (SELECT n.id FROM nearest AS n) THEN NULL
            ELSE haki_episode_excerpt(near.payload, p_excerpt_chars) END,
       near.occurred_at, source.id, near.step, near.thread_id, near.seq
FROM 
events AS source
CROSS JOIN LATERAL (
    SELECT earlier.*, -row_number() OVER (ORDER BY earlier.occurred_at DESC, earlier.seq DESC)
           AS step
    FROM (SELECT e.id, e.kind, e.payload, e.occurred_at, e.embedding, e.thread_id, e.seq
          FROM events AS e
          WHERE e.project_id = source.project_id AND e.subject_id = source.subject_id
            AND e.thread_id IS NOT DISTINCT FROM source.thread_id
            AND e.occurred_at <= source.occurred_at
            AND (e.occurred_at < source.occurred_at OR e.seq < source.seq)
          ORDER BY e.occurred_at DESC, e.seq DESC
          LIMIT p_neighbour_span) AS earlier
    UNION ALL
    SELECT later.*, row_number() OVER (ORDER BY later.occurred_at, later.seq)
    FROM (SELECT e.id, e.kind, e.payload, e.occurred_at, e.embedding, e.thread_id, e.seq
          FROM events AS e
          WHERE e.project_id = source.project_id AND e.subject_id = source.subject_id
            AND e.thread_id IS NOT DISTINCT FROM source.thread_id
            AND e.occurred_at >= source.occurred_at
            AND (e.occurred_at > source.occurred_at OR e.seq > source.seq)
          ORDER BY e.occurred_at, e.seq
          LIMIT p_neighbour_span) AS later
) AS near
WHERE p_use_neighbours AND source.id IN (SELECT id FROM sources)
  AND source.project_id = p_project_id AND source.subject_id = p_subject_id;
END$$;
REVOKE ALL ON FUNCTION haki_nearest_events(integer, integer, text, integer, text, vector, boolean, boolean, text, text, integer, integer, integer, integer, boolean, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION haki_nearest_events(integer, integer, text, integer, text, vector, boolean, boolean, text, text, integer, integer, integer, integer, boolean, text) TO haki_app;
