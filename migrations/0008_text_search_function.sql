-- The full-text arm, as a function the runtime role calls.
--
-- Why a function: under row-level security PostgreSQL only lets LEAKPROOF operators into an
-- index condition (a leaky one could reveal rows the policy hides), and the tsvector match
-- `@@` is not leakproof. Run as haki_app, `search_vector @@ q` is therefore never answered by
-- the GIN index: the planner scans the whole table (measured: 80–200 ms at 100k rows instead
-- of well under 1 ms). The index is usable for the owner, whose only policy is `true`.
--
-- So this function runs as the owner (SECURITY DEFINER) and applies the tenant boundary
-- itself, with the very expression of the tenant_isolation policy (0007): it returns facts of
-- the project set for the current transaction only, never another's, and nothing when no
-- project is set. It returns ids and ranks, nothing else; the caller joins back to facts
-- under RLS. The other hard filters are those of haki/assembler/sql.py (_FACT_SCOPE).
--
-- Ranking: facts holding every term (p_all) and facts holding any term (p_any) are each
-- capped at p_cap rows before ts_rank_cd (normalised by flag 32) orders them; see
-- RetrievalConfig.text_rank_cap for the trade-off. p_exclude removes facts already considered
-- (multi-hop).
CREATE FUNCTION haki_text_search(
    p_subject_id text, p_any tsquery, p_all tsquery, p_exclude uuid[], p_cap integer,
    p_limit integer)
RETURNS TABLE (id uuid, text_rank real)
-- ROWS: the planner's estimate of what it returns (p_limit is 64 for the arm, 5 for a hop);
-- the default (1000) makes the caller join the candidates to facts by a sequential scan.
LANGUAGE plpgsql STABLE SECURITY DEFINER ROWS 64
SET search_path = public, pg_temp
AS $$
DECLARE
    v_project text := NULLIF(current_setting('haki.project_id', true), '');
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
