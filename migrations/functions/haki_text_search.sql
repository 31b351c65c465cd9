-- The full-text search of the design page's ranking (the `seed` comparison baseline of
-- `haki eval`): facts holding every term (p_all) and facts holding any term (p_any), each
-- capped at p_cap rows, ordered by ts_rank_cd (normalised by flag 32). SECURITY DEFINER for
-- the reason haki_idf_search gives, applying the tenant boundary itself (haki_tenant()).
CREATE OR REPLACE FUNCTION haki_text_search(
    p_subject_id text, p_any tsquery, p_all tsquery, p_exclude uuid[], p_cap integer,
    p_limit integer)
RETURNS TABLE (id uuid, text_rank real)
-- ROWS: the planner's estimate of what it returns (p_limit is 64 for the arm, 5 for a hop);
-- the default (1000) makes the caller join the candidates to facts by a sequential scan.
LANGUAGE plpgsql STABLE SECURITY DEFINER ROWS 64
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v_project text := haki_tenant();
BEGIN
    IF v_project IS NULL OR p_any IS NULL THEN
        RETURN;
    END IF;
    -- EXECUTE plans with the actual values (a one-shot plan), so the planner sees how common
    -- the terms are: a term held by a tenth of a big scope is read by a sequential scan that
    -- stops at p_cap rows (measured ~6 ms at 1M facts), a rare one through the GIN index. A
    -- plan made for unknown parameters always builds the full GIN bitmap (~120 ms at 1M).
    -- The statement text is constant; every value is a parameter.
    RETURN QUERY EXECUTE $sql$
        WITH matched AS (
            (SELECT f.id, f.search_vector
             FROM facts AS f
             WHERE f.project_id = $1 AND f.subject_id = $2
               AND f.status = 'active' AND (f.valid_to IS NULL OR f.valid_to > now())
               AND f.search_vector @@ $4 AND NOT (f.id = ANY ($5))
             LIMIT $6)
            UNION
            (SELECT f.id, f.search_vector
             FROM facts AS f
             WHERE f.project_id = $1 AND f.subject_id = $2
               AND f.status = 'active' AND (f.valid_to IS NULL OR f.valid_to > now())
               AND f.search_vector @@ $3 AND NOT (f.id = ANY ($5))
             LIMIT $6)
        )
        SELECT m.id, ts_rank_cd(m.search_vector, $3, 32)
        FROM matched AS m
        ORDER BY 2 DESC, m.id
        LIMIT $7
    $sql$ USING v_project, p_subject_id, p_any, p_all, p_exclude, p_cap, p_limit;
END
$$;
REVOKE ALL ON FUNCTION haki_text_search(text, tsquery, tsquery, uuid[], integer, integer)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION haki_text_search(text, tsquery, tsquery, uuid[], integer, integer)
    TO haki_app;
