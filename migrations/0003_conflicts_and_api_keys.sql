-- Conflict sets (facts that contradict each other) and hashed API keys.
CREATE TABLE conflict_sets (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    project_id  text NOT NULL CHECK (char_length(project_id) BETWEEN 1 AND 128),
    subject_id  text NOT NULL CHECK (char_length(subject_id) BETWEEN 1 AND 128),
    fact_ids    uuid[] NOT NULL CHECK (cardinality(fact_ids) >= 2),
    status      text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'resolved')),
    reason      text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    resolved_at timestamptz,
    CHECK ((status = 'resolved') = (resolved_at IS NOT NULL))
);

-- The hard filter "never serve a fact of an open conflict set" looks up open sets of one scope.
CREATE INDEX conflict_sets_open_idx ON conflict_sets (project_id, subject_id) WHERE status = 'open';

CREATE TABLE api_keys (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    -- sha256 of the whole key, hex. The clear key is shown once at creation and never stored.
    key_hash   text NOT NULL UNIQUE CHECK (key_hash ~ '^[0-9a-f]{64}$'),
    -- First characters of the key, for display in listings ("hk_AbCd…").
    prefix     text NOT NULL,
    org_id     text NOT NULL CHECK (char_length(org_id) BETWEEN 1 AND 128),
    project_id text NOT NULL CHECK (char_length(project_id) BETWEEN 1 AND 128),
    label      text,
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz
);

-- The runtime role has no privilege on api_keys: it resolves a presented key through this
-- function, which runs as the owner and returns only a live key's identity. Before the key is
-- known there is no project to scope the transaction with, hence SECURITY DEFINER.
CREATE FUNCTION haki_authenticate(p_key_hash text)
RETURNS TABLE (key_id uuid, org_id text, project_id text)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
    SELECT k.id, k.org_id, k.project_id
    FROM api_keys AS k
    WHERE k.key_hash = p_key_hash AND k.revoked_at IS NULL
$$;
REVOKE ALL ON FUNCTION haki_authenticate(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION haki_authenticate(text) TO haki_app, haki_stats;
