-- The vector arm over facts: the scope's p_vector_top_k active facts nearest the question,
-- with their distance and what the packet and the rules need (never the embedding).
--
-- plan_cache_mode = force_custom_plan: the planner chooses between the HNSW graph and an
-- exact read of a small scope through facts_scope_idx by its estimate of the scope's size
-- (facts_scope_stats), which needs the call's actual project and subject; a generic plan would
-- pick one path for every scope.
--
-- The graph search reads haki_scan_rows rows (more than p_vector_top_k for a slice of the
-- graph searched, whose rows a relaxed iterative scan returns in the order it finds them) and
-- the nearest p_vector_top_k of them are kept exactly. If it brings back fewer (it visited
-- hnsw.max_scan_tuples before enough rows passed the scope filter: a slice of a large graph,
-- far from the question), `exact` (haki_nearest_facts_exact, planned only then) reads at most
-- p_max_scan_tuples rows of the scope and keeps the nearest (all of a scope that small): the
-- arm never comes back short, let alone empty, while its scope holds rows. Both are
-- MATERIALIZED so each runs once, on ids and distances only; the chosen rows are fetched back
-- by ctid, nearest first.
CREATE OR REPLACE FUNCTION haki_nearest_facts(
    p_project_id text, p_subject_id text, p_query_vector vector, p_vector_top_k integer,
    p_scan_rows integer, p_use_vector_arm boolean, p_facts_graph text,
    p_ef_search_min integer, p_ef_search_max integer, p_rows_per_ef integer,
    p_max_scan_tuples text, p_horizon_slow_seconds double precision,
    p_horizon_volatile_seconds double precision, p_horizon_ephemeral_seconds double precision)
RETURNS TABLE (item text, id uuid, distance double precision, predicate text, value jsonb,
               confidence real, valid_from timestamptz, source_event_ids uuid[],
               volatility text, conflict_open boolean, horizon_passed boolean)
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_custom_plan
SET search_path = pg_catalog, public, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_scan_rows integer;
BEGIN
    PERFORM haki_vector_search('facts', p_facts_graph, p_ef_search_min, p_ef_search_max,
                               p_rows_per_ef, p_max_scan_tuples);
    v_scan_rows := haki_scan_rows('facts', p_facts_graph, p_subject_id, p_vector_top_k,
                                  p_scan_rows);
    RETURN QUERY
    WITH scanned AS MATERIALIZED (
        SELECT f.ctid, f.id, (f.embedding <=> p_query_vector)::float8 AS distance
        FROM facts AS f
        WHERE p_use_vector_arm
          AND f.project_id = p_project_id AND f.subject_id = p_subject_id
          AND f.status = 'active' AND (f.valid_to IS NULL OR f.valid_to > now())
          AND NOT haki_subject_disabled(p_project_id, p_subject_id)
        ORDER BY f.embedding <=> p_query_vector
        LIMIT v_scan_rows
    ),
    exact AS MATERIALIZED (
        SELECT x.* FROM haki_nearest_facts_exact(p_project_id, p_subject_id, p_query_vector,
                                                   p_vector_top_k, p_max_scan_tuples::integer) AS x
        WHERE (SELECT count(*) FROM scanned) < p_vector_top_k
          AND p_use_vector_arm AND NOT haki_subject_disabled(p_project_id, p_subject_id)
    ),
    nearest AS (
        (SELECT * FROM scanned
         WHERE NOT EXISTS (SELECT FROM exact)
         ORDER BY distance, id
         LIMIT p_vector_top_k)
        UNION ALL
        SELECT * FROM exact
    )
    SELECT 'fact'::text, n.id, n.distance, f.predicate, f.value, f.confidence, f.valid_from,
           f.source_event_ids, f.volatility,
           f.id IN (SELECT c.fact_id
                    FROM haki_open_conflict_facts(p_project_id, p_subject_id) AS c(fact_id)),
           haki_horizon_passed(f.volatility,
                               coalesce(f.last_reinforced_at, f.valid_from, f.recorded_from),
                               p_horizon_slow_seconds, p_horizon_volatile_seconds,
                               p_horizon_ephemeral_seconds)
    FROM nearest AS n
    JOIN facts AS f ON f.ctid = n.ctid
    ORDER BY n.distance, n.id;
END
$$;
REVOKE ALL ON FUNCTION haki_nearest_facts(
    text, text, vector, integer, integer, boolean, text, integer, integer, integer, text,
    double precision, double precision, double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION haki_nearest_facts(
    text, text, vector, integer, integer, boolean, text, integer, integer, integer, text,
    double precision, double precision, double precision) TO haki_app;
