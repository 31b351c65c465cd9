-- Tenancy that follows the API key, projects owned by one org, and least-privilege roles.
--
-- 1. Projects. A project belongs to exactly one org; a key belongs to a project of its own org
--    (composite foreign key). Existing keys: a project is owned by the org of its oldest key,
--    and a live key of another org for that project (the audit's "evil-corp" key) is revoked.
CREATE TABLE projects (
    project_id text PRIMARY KEY CHECK (char_length(project_id) BETWEEN 1 AND 128),
    org_id     text NOT NULL CHECK (char_length(org_id) BETWEEN 1 AND 128),
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (project_id, org_id)
);
INSERT INTO projects (project_id, org_id, created_at)
SELECT DISTINCT ON (project_id) project_id, org_id, created_at
FROM api_keys
ORDER BY project_id, created_at, id;
UPDATE api_keys AS k SET revoked_at = now()
FROM projects AS p
WHERE k.project_id = p.project_id AND k.org_id <> p.org_id AND k.revoked_at IS NULL;
UPDATE api_keys AS k
SET label = concat_ws(' ', k.label, '[revoked by migration 0013: issued by org', k.org_id,
                      'for a project of another org]'),
    org_id = p.org_id
FROM projects AS p
WHERE k.project_id = p.project_id AND k.org_id <> p.org_id;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_project_org_fk
    FOREIGN KEY (project_id, org_id) REFERENCES projects (project_id, org_id);
ALTER TABLE projects ENABLE ROW LEVEL SECURITY;
ALTER TABLE projects FORCE ROW LEVEL SECURITY;
CREATE POLICY admin_all ON projects TO haki_admin USING (true) WITH CHECK (true);

-- 2. The tenant of a transaction is the project of the live key it presents. The runtime role
--    sets only the key's hash (`set_config('haki.key_hash', sha256, true)`); this function,
--    run as the owner, maps it to the key's project. A runtime role that sets haki.project_id,
--    or any hash that is not a live key's, sees nothing: the boundary is the key (a 256-bit
--    secret whose hash the runtime role cannot read), not a setting it may write itself.
--    STABLE: the policies call it once per statement, as an InitPlan (`(SELECT ...)`), and
--    the api_keys_key_hash_key unique index answers it.
CREATE FUNCTION haki_tenant() RETURNS text
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

-- Every tenant_isolation policy (0007, 0010 and any later) now compares with the key's project.
DO $$
DECLARE
    t text;
BEGIN
    FOR t IN SELECT tablename FROM pg_policies
             WHERE schemaname = 'public' AND policyname = 'tenant_isolation'
    LOOP
        EXECUTE format('DROP POLICY tenant_isolation ON %I', t);
        EXECUTE format(
            'CREATE POLICY tenant_isolation ON %I TO haki_app '
            'USING (project_id = (SELECT haki_tenant())) '
            'WITH CHECK (project_id = (SELECT haki_tenant()))', t);
    END LOOP;
END
$$;

-- The search functions that run as the owner applied the boundary themselves from
-- haki.project_id (haki_text_search, 0008; haki_bm25_search, 0011): each is redefined with
-- the key's project instead, from its own current definition (pg_get_functiondef), so no
-- body is copied here and none is missed.
DO $$
DECLARE
    f record;
BEGIN
    FOR f IN SELECT p.oid, pg_get_functiondef(p.oid) AS definition
             FROM pg_proc AS p
             WHERE p.prosecdef AND p.pronamespace = 'public'::regnamespace
               AND p.prosrc LIKE '%haki.project_id%'
    LOOP
        EXECUTE replace(f.definition, 'NULLIF(current_setting(''haki.project_id'', true), '''')',
                        'haki_tenant()');
    END LOOP;
    IF EXISTS (SELECT 1 FROM pg_proc WHERE pronamespace = 'public'::regnamespace
               AND prosrc LIKE '%haki.project_id%') THEN
        RAISE EXCEPTION 'a function still reads haki.project_id';
    END IF;
END
$$;

-- 3. Least privilege, re-asserted whatever the roles were before this migration.
--    The aggregation reads context calls and writes rollups: nothing of facts, events or
--    conflicts, and it never authenticates a key.
ALTER ROLE haki_app NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS INHERIT;
ALTER ROLE haki_stats NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS INHERIT;
ALTER ROLE haki_admin NOLOGIN NOREPLICATION NOBYPASSRLS;
DROP POLICY stats_read ON facts;
DROP POLICY stats_read ON events;
DROP POLICY stats_read ON conflict_sets;
REVOKE ALL ON facts, events, conflict_sets FROM haki_stats;
REVOKE EXECUTE ON FUNCTION haki_authenticate(text) FROM haki_stats;
-- Nobody but the owner creates objects in the schema (PostgreSQL 15 made this the default
-- for new databases; an upgraded one may still grant it).
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
-- SECURITY DEFINER functions resolve names from pg_catalog first, so an object planted in
-- another schema on the path can never stand in for a built-in.
DO $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc AS p
             WHERE p.prosecdef AND p.pronamespace = 'public'::regnamespace
    LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, public, pg_temp', f);
    END LOOP;
END
$$;
