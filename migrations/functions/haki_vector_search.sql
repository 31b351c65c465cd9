-- How widely the next vector search of this transaction looks (transaction-local settings:
-- nothing outlives the transaction, RDS-Proxy-safe).
--
-- pgvector's HNSW scan returns at most ef_search rows and the scope filter applies after the
-- scan, so a scope that is a small slice of the table would get a handful of rows out of k.
-- Iterative scans (pgvector 0.8) keep scanning until LIMIT rows pass the filter or
-- max_scan_tuples is reached; relaxed_order is never worse than strict_order in recall and
-- faster, and the arms re-sort their few rows exactly. The breadth follows the size of the
-- graph searched (pg_class.reltuples, kept by ANALYZE/VACUUM and set by an index build): one
-- unit per p_rows_per_ef rows, between p_ef_search_min and p_ef_search_max — a larger graph
-- needs a wider search to keep recall, a small one would only pay. The graph searched is the
-- scope's own when it has a valid one (p_graph, a big subject's partial index made by
-- haki.db.scope_indexes, which the planner then prefers), else the table's. Small scopes do
-- not use HNSW at all: the planner reads them exactly through the scope index.
CREATE OR REPLACE FUNCTION haki_vector_search(
    p_table regclass, p_graph text, p_ef_search_min integer, p_ef_search_max integer,
    p_rows_per_ef integer, p_max_scan_tuples text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v_rows real := coalesce(
        (SELECT c.reltuples
         FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid
         WHERE i.indexrelid = to_regclass(p_graph) AND i.indrelid = p_table AND i.indisvalid
           AND c.reltuples >= 0),
        (SELECT c.reltuples FROM pg_class AS c WHERE c.oid = p_table));
BEGIN
    PERFORM set_config('hnsw.iterative_scan', 'relaxed_order', true),
            set_config('hnsw.ef_search',
                       least(p_ef_search_max,
                             greatest(p_ef_search_min, v_rows / p_rows_per_ef))::int::text,
                       true),
            set_config('hnsw.max_scan_tuples', p_max_scan_tuples, true);
END
$$;
REVOKE ALL ON FUNCTION haki_vector_search(regclass, text, integer, integer, integer, text)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION haki_vector_search(regclass, text, integer, integer, integer, text)
    TO haki_app;
