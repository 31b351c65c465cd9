-- pgvector and the database roles.
--
-- Roles (all NOLOGIN-safe to re-create; passwords are never set here):
--   haki_admin  NOLOGIN group. Its members (the migrating owner, the admin CLI) pass every
--               row-level policy. The user running migrations joins it below.
--   haki_app    the runtime role of the API functions: LOGIN, not superuser, not table owner,
--               no BYPASSRLS. Sees exactly the project set in the transaction (0007).
--   haki_stats  the cross-project role of the scheduled aggregation: reads calls and facts of
--               every project, writes the rollups. Never used by the API functions.
-- On Amazon RDS the login roles authenticate with IAM tokens (rds_iam) through RDS Proxy.
CREATE EXTENSION IF NOT EXISTS vector;

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'haki_admin') THEN
        CREATE ROLE haki_admin NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'haki_app') THEN
        CREATE ROLE haki_app LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'haki_stats') THEN
        CREATE ROLE haki_stats LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'rds_iam') THEN
        GRANT rds_iam TO haki_app, haki_stats;
    END IF;
END
$$;

GRANT haki_admin TO CURRENT_USER;
GRANT USAGE ON SCHEMA public TO haki_app, haki_stats;
