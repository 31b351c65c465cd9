-- A presented key's identity, for the edge's authentication (haki/keys.py).
--
-- The runtime role has no privilege on api_keys: this function runs as the owner and returns
-- only a live key's identity. Before the key is known there is no project to scope the
-- transaction with, hence SECURITY DEFINER; the unique index on key_hash answers it.
CREATE OR REPLACE FUNCTION haki_authenticate(p_key_hash text)
RETURNS TABLE (key_id uuid, org_id text, project_id text)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
    SELECT k.id, k.org_id, k.project_id
    FROM api_keys AS k
    WHERE k.key_hash = p_key_hash AND k.revoked_at IS NULL
$$;
REVOKE ALL ON FUNCTION haki_authenticate(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION haki_authenticate(text) TO haki_app;
