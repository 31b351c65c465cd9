-- The vector arm over events: the scope's p_vector_top_k events nearest the question (of the
-- thread p_thread_id, when not NULL), with their distance and excerpt, then the turns around
-- the nearest p_neighbour_sources of them (item 'neighbour', with the source they belong to,
-- their step from it and their distance). Every event row carries its thread and its place in
-- the order written (seq).
--
-- plan_cache_mode = force_custom_plan, the graph search of haki_scan_rows rows kept exactly and
-- the bounded exact read of a scope it left short (haki_nearest_events_exact), for the reasons
-- haki_nearest_facts gives.
CREATE OR REPLACE FUNCTION haki_nearest_events(
    p_project_id text, p_subject_id text, p_query_vector vector, p_vector_top_k integer,
    p_scan_rows integer, p_use_vector_arm boolean, p_use_episodes boolean,
    p_events_graph text, p_ef_search_min integer, p_ef_search_max integer,
    p_rows_per_ef integer, p_max_scan_tuples text, p_neighbour_sources integer,
    p_excerpt_chars integer, p_neighbour_span integer, p_use_neighbours boolean,
    p_thread_id text)
RETURNS TABLE (item text, id uuid, distance double precision, kind text, payload jsonb,
               occurred_at timestamptz, source_id uuid, step bigint, thread_id text,
               seq bigint)
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_custom_plan
SET search_path = pg_catalog, public, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_scan_rows integer;
BEGIN
    PERFORM haki_vector_search('events', p_events_graph, p_ef_search_min, p_ef_search_max,
                               p_rows_per_ef, p_max_scan_tuples);
    v_scan_rows := haki_scan_rows('events', p_events_graph, p_subject_id, p_vector_top_k,
                                  p_scan_rows);
    RETURN QUERY
    WITH scanned AS MATERIALIZED (
        SELECT e.ctid, e.id, (e.embedding <=> p_query_vector)::float8 AS distance
        FROM events AS e
        WHERE p_use_vector_arm AND p_use_episodes
          AND e.project_id = p_project_id AND e.subject_id = p_subject_id
          AND (p_thread_id IS NULL OR e.thread_id = p_thread_id)
          AND NOT haki_subject_disabled(p_project_id, p_subject_id)
        ORDER BY e.embedding <=> p_query_vector
        LIMIT v_scan_rows
    ),
    exact AS MATERIALIZED (
        SELECT x.* FROM haki_nearest_events_exact(p_project_id, p_subject_id, p_thread_id,
                                                   p_query_vector, p_vector_top_k,
                                                   p_max_scan_tuples::integer) AS x
        WHERE (SELECT count(*) FROM scanned) < p_vector_top_k
          AND p_use_vector_arm AND p_use_episodes
          AND NOT haki_subject_disabled(p_project_id, p_subject_id)
    ),
    nearest AS MATERIALIZED (
        (SELECT * FROM scanned
         WHERE NOT EXISTS (SELECT FROM exact)
         ORDER BY distance, id
         LIMIT p_vector_top_k)
        UNION ALL
        SELECT * FROM exact
    ),
    sources AS (
        SELECT n.id FROM nearest AS n ORDER BY n.distance, n.id LIMIT p_neighbour_sources
    )
    SELECT 'event'::text, n.id, n.distance, e.kind,
           haki_episode_excerpt(e.payload, p_excerpt_chars), e.occurred_at,
           NULL::uuid, NULL::bigint, e.thread_id, e.seq
    FROM nearest AS n
    JOIN events AS e ON e.ctid = n.ctid
    UNION ALL
    SELECT 'neighbour', near.id, (near.embedding <=> p_query_vector)::float8, near.kind,
           haki_episode_excerpt(near.payload, p_excerpt_chars), near.occurred_at,
           near.source_id, near.step, near.thread_id, near.seq
    FROM (SELECT array_agg(s.id) AS ids FROM sources AS s) AS source
    CROSS JOIN LATERAL haki_neighbour_turns(p_project_id, p_subject_id, source.ids,
                                            p_neighbour_span) AS near
    -- A call narrowed to a thread serves none of another thread's turns.
    WHERE p_use_neighbours AND (p_thread_id IS NULL OR near.thread_id = p_thread_id);
END
$$;
REVOKE ALL ON FUNCTION haki_nearest_events(
    text, text, vector, integer, integer, boolean, boolean, text, integer, integer, integer,
    text, integer, integer, integer, boolean, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION haki_nearest_events(
    text, text, vector, integer, integer, boolean, boolean, text, integer, integer, integer,
    text, integer, integer, integer, boolean, text) TO haki_app;
