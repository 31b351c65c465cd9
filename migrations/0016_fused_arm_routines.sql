-- The fused ranking's candidate statements as PL/pgSQL functions, whose plans are
-- cached per connection (haki.assembler.routines). RENDERED from
-- haki/assembler/sql.py by `python -m haki.assembler.routines`: do not edit; a
-- changed statement needs a new migration rendered the same way.

DROP FUNCTION IF EXISTS haki_text_arm(text, text[], integer, text, boolean, integer, integer, boolean, double precision, double precision, double precision, integer, integer, boolean, text);
CREATE FUNCTION haki_text_arm(
    p_query text,
    p_stopwords text[],
    p_max_terms integer,
    p_subject_id text,
    p_use_episodes boolean,
    p_text_candidates integer,
    p_text_top_k integer,
    p_use_text_arm boolean,
    p_horizon_slow_seconds double precision,
    p_horizon_volatile_seconds double precision,
    p_horizon_ephemeral_seconds double precision,
    p_excerpt_chars integer,
    p_neighbour_span integer,
    p_use_neighbours boolean,
    p_project_id text)
RETURNS TABLE (item text, id uuid, text_arm_rank bigint, text_rank double precision, embedding vector, predicate text, value jsonb, confidence real, valid_from timestamp with time zone, source_event_ids uuid[], volatility text, conflict_open boolean, horizon_passed boolean, kind text, payload jsonb, occurred_at timestamp with time zone, source_id uuid, step bigint)
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan
SET search_path = pg_catalog, public, pg_temp
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
        p_subject_id, terms.terms, p_use_episodes, p_text_candidates, p_text_top_k)
        AS hit
    WHERE p_use_text_arm
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
       e.kind, CASE WHEN jsonb_typeof(e.payload -> 'text') = 'string'
         THEN jsonb_build_object('text', left(e.payload ->> 'text', p_excerpt_chars))
         ELSE e.payload END AS payload, e.occurred_at,
       NULL::uuid AS source_id, NULL::bigint AS step
FROM arm AS a
LEFT JOIN facts AS f ON a.item = 'fact' AND f.id = a.id
LEFT JOIN events AS e ON a.item = 'event' AND e.id = a.id
UNION ALL
SELECT 'neighbour', near.id, NULL, NULL, near.embedding, 
    NULL::text, NULL::jsonb, NULL::real, NULL::timestamptz, NULL::uuid[], NULL::text,
    NULL::boolean, NULL::boolean,
       near.kind,
       CASE WHEN near.id IN (SELECT id FROM sources) THEN NULL
            ELSE CASE WHEN jsonb_typeof(near.payload -> 'text') = 'string'
         THEN jsonb_build_object('text', left(near.payload ->> 'text', p_excerpt_chars))
         ELSE near.payload END END,
       near.occurred_at, source.id, near.step
FROM 
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
          LIMIT p_neighbour_span) AS earlier
    UNION ALL
    SELECT later.*, row_number() OVER (ORDER BY later.occurred_at, later.id)
    FROM (SELECT e.id, e.kind, e.payload, e.occurred_at, e.embedding
          FROM events AS e
          WHERE e.project_id = source.project_id AND e.subject_id = source.subject_id
            AND e.occurred_at >= source.occurred_at
            AND (e.occurred_at > source.occurred_at OR e.id > source.id)
          ORDER BY e.occurred_at, e.id
          LIMIT p_neighbour_span) AS later
) AS near
WHERE p_use_neighbours AND source.id IN (SELECT id FROM sources)
  AND source.project_id = p_project_id AND source.subject_id = p_subject_id;
END
$$;
REVOKE ALL ON FUNCTION haki_text_arm(text, text[], integer, text, boolean, integer, integer, boolean, double precision, double precision, double precision, integer, integer, boolean, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION haki_text_arm(text, text[], integer, text, boolean, integer, integer, boolean, double precision, double precision, double precision, integer, integer, boolean, text) TO haki_app;

DROP FUNCTION IF EXISTS haki_nearest_facts(integer, integer, text, integer, text, vector, boolean, text, text, integer, double precision, double precision, double precision);
CREATE FUNCTION haki_nearest_facts(
    p_ef_search_max integer,
    p_ef_search_min integer,
    p_facts_graph text,
    p_rows_per_ef integer,
    p_max_scan_tuples text,
    p_query_vector vector,
    p_use_vector_arm boolean,
    p_project_id text,
    p_subject_id text,
    p_vector_top_k integer,
    p_horizon_slow_seconds double precision,
    p_horizon_volatile_seconds double precision,
    p_horizon_ephemeral_seconds double precision)
RETURNS TABLE (item text, id uuid, distance double precision, predicate text, value jsonb, confidence real, valid_from timestamp with time zone, source_event_ids uuid[], volatility text, conflict_open boolean, horizon_passed boolean)
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_custom_plan
SET search_path = pg_catalog, public, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    PERFORM set_config('hnsw.iterative_scan', 'relaxed_order', true),
       set_config('hnsw.ef_search',
                  least(p_ef_search_max, greatest(p_ef_search_min,
                        coalesce((SELECT c.reltuples
                                  FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid
                                  WHERE i.indexrelid = to_regclass(p_facts_graph)
                                    AND i.indrelid = 'facts'::regclass AND i.indisvalid
                                    AND c.reltuples >= 0),
                                 (SELECT reltuples FROM pg_class
                                  WHERE oid = 'facts'::regclass))
                        / p_rows_per_ef))::int::text,
                  true),
       set_config('hnsw.max_scan_tuples', p_max_scan_tuples, true);
    RETURN QUERY
WITH nearest AS MATERIALIZED (
    SELECT f.ctid, f.id, (f.embedding <=> p_query_vector)::float8 AS distance
    FROM facts AS f
    WHERE p_use_vector_arm AND 
    f.project_id = p_project_id
    AND f.subject_id = p_subject_id
    AND f.status = 'active'
    AND (f.valid_to IS NULL OR f.valid_to > now())

    ORDER BY f.embedding <=> p_query_vector
    LIMIT p_vector_top_k
)
SELECT 'fact'::text AS item, n.id, n.distance, 
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
    END AS horizon_passed
FROM nearest AS n
JOIN facts AS f ON f.ctid = n.ctid;
END
$$;
REVOKE ALL ON FUNCTION haki_nearest_facts(integer, integer, text, integer, text, vector, boolean, text, text, integer, double precision, double precision, double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION haki_nearest_facts(integer, integer, text, integer, text, vector, boolean, text, text, integer, double precision, double precision, double precision) TO haki_app;

DROP FUNCTION IF EXISTS haki_nearest_events(integer, integer, text, integer, text, vector, boolean, boolean, text, text, integer, integer, integer, integer, boolean);
CREATE FUNCTION haki_nearest_events(
    p_ef_search_max integer,
    p_ef_search_min integer,
    p_events_graph text,
    p_rows_per_ef integer,
    p_max_scan_tuples text,
    p_query_vector vector,
    p_use_vector_arm boolean,
    p_use_episodes boolean,
    p_project_id text,
    p_subject_id text,
    p_vector_top_k integer,
    p_neighbour_sources integer,
    p_excerpt_chars integer,
    p_neighbour_span integer,
    p_use_neighbours boolean)
RETURNS TABLE (item text, id uuid, distance double precision, kind text, payload jsonb, occurred_at timestamp with time zone, source_id uuid, step bigint)
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_custom_plan
SET search_path = pg_catalog, public, pg_temp
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
    ORDER BY e.embedding <=> p_query_vector
    LIMIT p_vector_top_k
),
sources AS (
    SELECT n.id FROM nearest AS n ORDER BY n.distance, n.id LIMIT p_neighbour_sources
)
SELECT 'event'::text AS item, n.id, n.distance, e.kind, CASE WHEN jsonb_typeof(e.payload -> 'text') = 'string'
         THEN jsonb_build_object('text', left(e.payload ->> 'text', p_excerpt_chars))
         ELSE e.payload END AS payload,
       e.occurred_at, NULL::uuid AS source_id, NULL::bigint AS step
FROM nearest AS n
JOIN events AS e ON e.ctid = n.ctid
UNION ALL
SELECT 'neighbour', near.id, (near.embedding <=> p_query_vector)::float8, near.kind,
       CASE WHEN near.id IN (SELECT n.id FROM nearest AS n) THEN NULL
            ELSE CASE WHEN jsonb_typeof(near.payload -> 'text') = 'string'
         THEN jsonb_build_object('text', left(near.payload ->> 'text', p_excerpt_chars))
         ELSE near.payload END END,
       near.occurred_at, source.id, near.step
FROM 
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
          LIMIT p_neighbour_span) AS earlier
    UNION ALL
    SELECT later.*, row_number() OVER (ORDER BY later.occurred_at, later.id)
    FROM (SELECT e.id, e.kind, e.payload, e.occurred_at, e.embedding
          FROM events AS e
          WHERE e.project_id = source.project_id AND e.subject_id = source.subject_id
            AND e.occurred_at >= source.occurred_at
            AND (e.occurred_at > source.occurred_at OR e.id > source.id)
          ORDER BY e.occurred_at, e.id
          LIMIT p_neighbour_span) AS later
) AS near
WHERE p_use_neighbours AND source.id IN (SELECT id FROM sources)
  AND source.project_id = p_project_id AND source.subject_id = p_subject_id;
END
$$;
REVOKE ALL ON FUNCTION haki_nearest_events(integer, integer, text, integer, text, vector, boolean, boolean, text, text, integer, integer, integer, integer, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION haki_nearest_events(integer, integer, text, integer, text, vector, boolean, boolean, text, text, integer, integer, integer, integer, boolean) TO haki_app;
