-- The planner's estimate of a scope's size, for the vector arm's HNSW search breadth.
--
-- pgvector's hnsw.ef_search trades recall for time. A breadth of 100 finds ≥ 0.95 of the true
-- top 64 in scopes up to ~100k facts, but only ~0.76 in a scope of 1M, which needs ~1000
-- (measured, docs/benchmarks.md) — and 1000 would triple the cost of every ordinary call. So
-- the breadth follows the scope's size (haki/assembler/sql.py), read from the statistics the
-- planner already keeps (facts_scope_stats, 0002): EXPLAIN plans without executing, ~0.3 ms.
--
-- SECURITY DEFINER: under row-level security the planner folds the policy's own selectivity
-- into the estimate, which would hide the scope's real size. The function only ever estimates
-- subjects of the project set for the current transaction, and returns a number, never rows.
CREATE FUNCTION haki_scope_estimate(p_subject_id text)
RETURNS bigint
-- VOLATILE: PostgreSQL allows EXPLAIN only in volatile functions.
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    v_project text := NULLIF(current_setting('haki.project_id', true), '');
    v_plan json;
BEGIN
    IF v_project IS NULL THEN
        RETURN 0;
    END IF;
    EXECUTE format(
        'EXPLAIN (FORMAT JSON) SELECT 1 FROM facts '
        'WHERE project_id = %L AND subject_id = %L AND status = %L',
        v_project, p_subject_id, 'active')
    INTO v_plan;
    RETURN (v_plan -> 0 -> 'Plan' ->> 'Plan Rows')::bigint;
END
$$;
REVOKE ALL ON FUNCTION haki_scope_estimate(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION haki_scope_estimate(text) TO haki_app;
