-- The nearest p_wanted active facts of the scope among at most p_read_rows of them, read
-- without the graph: haki_nearest_facts's completion of a graph search that came back short.
-- PL/pgSQL, so that its statement is planned only when it runs (a call whose search filled
-- its depth never plans it). ROWS 1: it rarely runs, and the caller's join back to the table
-- by ctid must stay a lookup per row; planned for a function's default 1,000 rows, that join
-- became a hash of the whole table (a small scope's arm took twice as long).
CREATE OR REPLACE FUNCTION haki_nearest_facts_exact(
    p_project_id text, p_subject_id text, p_query_vector vector, p_wanted integer,
    p_read_rows integer)
RETURNS TABLE (ctid tid, id uuid, distance double precision)
LANGUAGE plpgsql STABLE ROWS 1
SET search_path = pg_catalog, public, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT f.ctid, f.id, (f.embedding <=> p_query_vector)::float8
    FROM (SELECT f.ctid, f.id, f.embedding
          FROM facts AS f
          WHERE f.project_id = p_project_id AND f.subject_id = p_subject_id
            AND f.status = 'active' AND (f.valid_to IS NULL OR f.valid_to > now())
          LIMIT p_read_rows) AS f
    ORDER BY 3, 2
    LIMIT p_wanted;
END
$$;
REVOKE ALL ON FUNCTION haki_nearest_facts_exact(text, text, vector, integer, integer)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION haki_nearest_facts_exact(text, text, vector, integer, integer)
    TO haki_app;
