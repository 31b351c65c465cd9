-- The tenant of a transaction: the project of the live API key it presents.
--
-- The runtime role sets only the key's hash (`set_config('haki.key_hash', sha256, true)`,
-- haki/db/connection.py); this function, run as the owner, maps it to the key's project. A
-- runtime role that presents any hash that is not a live key's sees nothing: the boundary is
-- the key (a 256-bit secret whose hash the runtime role cannot read), not a setting it may
-- write itself. STABLE: each policy calls it once per statement, as an InitPlan
-- (`(SELECT haki_tenant())`), which the api_keys_key_hash_key unique index answers; the
-- InitPlan's value can then seek each table's (project_id, …) primary key.
CREATE OR REPLACE FUNCTION haki_tenant()
RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
    SELECT k.project_id
    FROM public.api_keys AS k
    WHERE k.key_hash = NULLIF(current_setting('haki.key_hash', true), '')
      AND k.revoked_at IS NULL
$$;
REVOKE ALL ON FUNCTION haki_tenant() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION haki_tenant() TO haki_app;

-- The runtime role reads and writes the rows of its key's project, on every tenant table.
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['facts', 'events', 'conflict_sets', 'disabled_subjects',
                             'erasure_receipts', 'context_calls', 'context_traces',
                             'stats_rollups', 'project_storage', 'call_feedback']
    LOOP
        EXECUTE format('DROP POLICY IF EXISTS tenant_isolation ON %I', t);
        EXECUTE format(
            'CREATE POLICY tenant_isolation ON %I TO haki_app '
            'USING (project_id = (SELECT haki_tenant())) '
            'WITH CHECK (project_id = (SELECT haki_tenant()))', t);
    END LOOP;
END
$$;
