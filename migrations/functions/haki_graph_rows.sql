-- The rows of the HNSW graph a vector search of p_table uses: the scope's own graph (p_graph,
-- a big subject's partial index made by haki.db.scope_indexes, which the planner then
-- prefers) when it has a valid one, else the table's (pg_class.reltuples, kept by
-- ANALYZE/VACUUM and set by an index build). Inlined into its callers (no SET clause; names
-- qualified instead).
CREATE OR REPLACE FUNCTION haki_graph_rows(p_table regclass, p_graph text)
RETURNS real
LANGUAGE sql STABLE
AS $$
    SELECT coalesce(
        (SELECT c.reltuples
         FROM pg_catalog.pg_index AS i JOIN pg_catalog.pg_class AS c ON c.oid = i.indexrelid
         WHERE i.indexrelid = pg_catalog.to_regclass(p_graph) AND i.indrelid = p_table
           AND i.indisvalid AND c.reltuples >= 0),
        (SELECT c.reltuples FROM pg_catalog.pg_class AS c WHERE c.oid = p_table))
$$;
REVOKE ALL ON FUNCTION haki_graph_rows(regclass, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION haki_graph_rows(regclass, text) TO haki_app;
