-- How many rows a vector arm's graph search reads, after haki_vector_search has set its
-- breadth: p_wanted, or at least p_scan_rows when the scope is a slice of the graph searched
-- (haki_graph_rows): less than half of it, and the search's first batch, ef_search rows of
-- the graph, expected to hold fewer than half of p_wanted rows of the scope (its rows counted
-- in text_scope_stats).
--
-- Past its first batch, a relaxed iterative scan returns the rows that pass the scope filter
-- in the order it finds them, not nearest first, and LIMIT keeps the first found: a slice
-- searched from a question far from it got 15-20 of its 64 nearest rows. Reading further,
-- the arm keeps the nearest exactly. A scope that (nearly) fills the first batch, whose few
-- later rows are the farthest kept, is read as before: reading three times the rows for
-- every call of it (a whole table's scope, a subject in its own graph) cost a third more
-- time per call.
--
-- SECURITY DEFINER: the runtime role cannot read text_scope_stats (haki_idf_search reads it
-- as the owner too); the tenant boundary is applied here, the key's project (haki_tenant()).
CREATE OR REPLACE FUNCTION haki_scan_rows(
    p_table regclass, p_graph text, p_subject_id text, p_wanted integer, p_scan_rows integer)
RETURNS integer
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
    SELECT CASE
        WHEN 2 * scope.rows < graph.rows
             AND 2 * current_setting('hnsw.ef_search')::integer * scope.rows
                 < p_wanted * graph.rows
        THEN greatest(p_wanted, p_scan_rows)
        ELSE p_wanted
    END
    FROM (SELECT coalesce((SELECT CASE p_table WHEN 'facts'::regclass THEN s.fact_docs
                                               ELSE s.event_docs END
                           FROM text_scope_stats AS s
                           WHERE s.project_id = haki_tenant()
                             AND s.subject_id = p_subject_id), 0) AS rows) AS scope,
         (SELECT haki_graph_rows(p_table, p_graph) AS rows) AS graph
$$;
REVOKE ALL ON FUNCTION haki_scan_rows(regclass, text, text, integer, integer)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION haki_scan_rows(regclass, text, text, integer, integer)
    TO haki_app;
