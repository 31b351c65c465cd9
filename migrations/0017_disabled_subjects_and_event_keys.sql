-- Forgetting serves nothing of a disabled subject, and event ids are unique per project.
--
-- 1. disabled_subjects: one row per subject that POST /v1/forget `disable` disabled (the row
--    goes when `enable` brings the subject back, or with the subject's erasure). The three
--    candidate functions of 0016 are redefined with identical signatures and bodies, plus one
--    gate each: the subject's row absent (an uncorrelated NOT EXISTS on the primary key, a
--    one-time filter on top of the same plan; the scope condition stays first). The turns
--    around episodes come from the arms' own rows, so they are gated with them. The text arm
--    also returns one row of item 'subject_disabled' (every other column NULL) when the
--    subject is disabled: the assembler reads it in its first round trip and warns, with no
--    statement added. Its join to events names the project (their key, below).
--
-- 2. events: the primary key becomes (project_id, id): two projects can hold the same client
--    event id, and a write never learns whether another project holds it.

CREATE TABLE disabled_subjects (
    project_id  text NOT NULL CHECK (char_length(project_id) BETWEEN 1 AND 128),
    subject_id  text NOT NULL CHECK (char_length(subject_id) BETWEEN 1 AND 128),
    disabled_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, subject_id)
);
ALTER TABLE disabled_subjects ENABLE ROW LEVEL SECURITY;
ALTER TABLE disabled_subjects FORCE ROW LEVEL SECURITY;
CREATE POLICY admin_all ON disabled_subjects TO haki_admin USING (true) WITH CHECK (true);
CREATE POLICY tenant_isolation ON disabled_subjects TO haki_app
    USING (project_id = (SELECT haki_tenant()))
    WITH CHECK (project_id = (SELECT haki_tenant()));
GRANT SELECT, INSERT, DELETE ON disabled_subjects TO haki_app;

ALTER TABLE events DROP CONSTRAINT events_pkey, ADD PRIMARY KEY (project_id, id);

CREATE OR REPLACE FUNCTION haki_text_arm(
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
       e.kind, CASE WHEN jsonb_typeof(e.payload -> 'text') = 'string'
         THEN jsonb_build_object('text', left(e.payload ->> 'text', p_excerpt_chars))
         ELSE e.payload END AS payload, e.occurred_at,
       NULL::uuid AS source_id, NULL::bigint AS step
FROM arm AS a
LEFT JOIN facts AS f ON a.item = 'fact' AND f.id = a.id
LEFT JOIN events AS e ON a.item = 'event' AND e.project_id = p_project_id AND e.id = a.id
UNION ALL
SELECT 'subject_disabled', NULL::uuid, NULL::bigint, NULL::float8, NULL::vector, NULL::text,
       NULL::jsonb, NULL::real, NULL::timestamptz, NULL::uuid[], NULL::text, NULL::boolean,
       NULL::boolean, NULL::text, NULL::jsonb, NULL::timestamptz, NULL::uuid, NULL::bigint
WHERE EXISTS (SELECT 1 FROM disabled_subjects AS d
              WHERE d.project_id = p_project_id AND d.subject_id = p_subject_id)
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

CREATE OR REPLACE FUNCTION haki_nearest_facts(
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
    AND NOT EXISTS (SELECT 1 FROM disabled_subjects AS d
              WHERE d.project_id = p_project_id AND d.subject_id = p_subject_id)
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

CREATE OR REPLACE FUNCTION haki_nearest_events(
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
      AND NOT EXISTS (SELECT 1 FROM disabled_subjects AS d
                  WHERE d.project_id = p_project_id AND d.subject_id = p_subject_id)
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
