-- Tenant isolation, the second wall (the first: every query filters on the exact scope).
--
-- The runtime role sees and writes only the rows of the project set for the current
-- transaction by `SELECT set_config('haki.project_id', $1, true)` (transaction-local, so safe
-- behind RDS Proxy's connection reuse). Outside such a transaction the setting is unset (NULL)
-- or, on a connection that once set it, reads back as '' — NULLIF maps both to NULL, and
-- `project_id = NULL` is never true: the runtime role fails closed and sees nothing.
--
-- FORCE makes the policies apply to the table owner too; haki_admin members (migrations,
-- the admin CLI) get an explicit pass-through policy instead of relying on ownership.
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['facts', 'events', 'conflict_sets', 'context_calls',
                             'context_traces', 'stats_rollups', 'api_keys']
    LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY admin_all ON %I TO haki_admin USING (true) WITH CHECK (true)', t);
    END LOOP;

    FOREACH t IN ARRAY ARRAY['facts', 'events', 'conflict_sets', 'context_calls',
                             'context_traces', 'stats_rollups']
    LOOP
        EXECUTE format(
            'CREATE POLICY tenant_isolation ON %I TO haki_app '
            'USING (project_id = NULLIF(current_setting(''haki.project_id'', true), '''')) '
            'WITH CHECK (project_id = NULLIF(current_setting(''haki.project_id'', true), ''''))',
            t);
    END LOOP;

    -- The aggregation reads across projects and writes only rollups.
    FOREACH t IN ARRAY ARRAY['facts', 'events', 'conflict_sets', 'context_calls']
    LOOP
        EXECUTE format('CREATE POLICY stats_read ON %I FOR SELECT TO haki_stats USING (true)', t);
    END LOOP;
END
$$;
CREATE POLICY stats_write ON stats_rollups TO haki_stats USING (true) WITH CHECK (true);

-- Privileges: the runtime role reads memory and writes memory, calls and traces; it never
-- touches api_keys (see haki_authenticate) nor the watermark.
GRANT SELECT, INSERT, UPDATE ON facts, events, conflict_sets TO haki_app;
GRANT SELECT, INSERT ON context_calls, context_traces TO haki_app;
GRANT SELECT ON stats_rollups, stats_watermark TO haki_app;

GRANT SELECT ON facts, events, conflict_sets, context_calls TO haki_stats;
GRANT SELECT, INSERT, UPDATE, DELETE ON stats_rollups TO haki_stats;
GRANT SELECT, INSERT, UPDATE ON stats_watermark TO haki_stats;
