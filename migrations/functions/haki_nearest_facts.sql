-- The vector arm over facts: the scope's p_vector_top_k active facts nearest the question,
-- with their distance and what the packet and the rules need (never the embedding).
--
-- plan_cache_mode = force_custom_plan: the planner chooses between the HNSW graph and an
-- exact read of a small scope through facts_scope_idx by its estimate of the scope's size
-- (facts_scope_stats), which needs the call's actual project and subject; a generic plan would
-- pick one path for every scope. `nearest` is MATERIALIZED so the graph search runs once, on
-- ids and distances only, and the chosen rows are fetched back by ctid.
CREATE OR REPLACE FUNCTION haki_nearest_facts(
    p_project_id text, p_subject_id text, p_query_vector vector, p_vector_top_k integer,
    p_use_vector_arm boolean, p_facts_graph text, p_ef_search_min integer,
    p_ef_search_max integer, p_rows_per_ef integer, p_max_scan_tuples text,
    p_horizon_slow_seconds double precision, p_horizon_volatile_seconds double precision,
    p_horizon_ephemeral_seconds double precision)
RETURNS TABLE (item text, id uuid, distance double precision, predicate text, value jsonb,
               confidence real, valid_from timestamptz, source_event_ids uuid[],
               volatility text, conflict_open boolean, horizon_passed boolean)
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_custom_plan
SET search_path = pg_catalog, public, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    PERFORM haki_vector_search('facts', p_facts_graph, p_ef_search_min, p_ef_search_max,
                               p_rows_per_ef, p_max_scan_tuples);
    RETURN QUERY
    WITH nearest AS MATERIALIZED (
        SELECT f.ctid, f.id, (f.embedding <=> p_query_vector)::float8 AS distance
        FROM facts AS f
        WHERE p_use_vector_arm
          AND f.project_id = p_project_id AND f.subject_id = p_subject_id
          AND f.status = 'active' AND (f.valid_to IS NULL OR f.valid_to > now())
          AND NOT haki_subject_disabled(p_project_id, p_subject_id)
        ORDER BY f.embedding <=> p_query_vector
        LIMIT p_vector_top_k
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
    JOIN facts AS f ON f.ctid = n.ctid;
END
$$;
REVOKE ALL ON FUNCTION haki_nearest_facts(
    text, text, vector, integer, boolean, text, integer, integer, integer, text,
    double precision, double precision, double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION haki_nearest_facts(
    text, text, vector, integer, boolean, text, integer, integer, integer, text,
    double precision, double precision, double precision) TO haki_app;
