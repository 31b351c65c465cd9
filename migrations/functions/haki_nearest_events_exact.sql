-- The nearest p_wanted events of the scope (of the thread p_thread_id, when not NULL) among at
-- most p_read_rows of them, read without the graph: haki_nearest_events's completion of a
-- graph search that came back short (PL/pgSQL and ROWS 1 for the reasons
-- haki_nearest_facts_exact gives).
CREATE OR REPLACE FUNCTION haki_nearest_events_exact(
    p_project_id text, p_subject_id text, p_thread_id text, p_query_vector vector,
    p_wanted integer, p_read_rows integer)
RETURNS TABLE (ctid tid, id uuid, distance double precision)
LANGUAGE plpgsql STABLE ROWS 1
SET search_path = pg_catalog, public, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT e.ctid, e.id, (e.embedding <=> p_query_vector)::float8
    FROM (SELECT e.ctid, e.id, e.embedding
          FROM events AS e
          WHERE e.project_id = p_project_id AND e.subject_id = p_subject_id
            AND (p_thread_id IS NULL OR e.thread_id = p_thread_id)
          LIMIT p_read_rows) AS e
    ORDER BY 3, 2
    LIMIT p_wanted;
END
$$;
REVOKE ALL ON FUNCTION haki_nearest_events_exact(text, text, text, vector, integer, integer)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION haki_nearest_events_exact(text, text, text, vector, integer, integer)
    TO haki_app;
