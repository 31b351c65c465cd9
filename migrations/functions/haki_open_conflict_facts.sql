-- The conflict rule (docs/spec.md §4.1): the facts of one scope held by an open conflict set,
-- which are never served. The arms ask `f.id IN (SELECT … FROM haki_open_conflict_facts(…))`:
-- inlined, an uncorrelated subquery read once per statement (conflict_sets_open_idx), hashed.
CREATE OR REPLACE FUNCTION haki_open_conflict_facts(p_project_id text, p_subject_id text)
RETURNS SETOF uuid
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT fact_id
    FROM conflict_sets AS c
    CROSS JOIN LATERAL unnest(c.fact_ids) AS fact_id
    WHERE c.project_id = p_project_id AND c.subject_id = p_subject_id AND c.status = 'open'
$$;
REVOKE ALL ON FUNCTION haki_open_conflict_facts(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION haki_open_conflict_facts(text, text) TO haki_app;
