-- The turns around episodes: for each event of p_source_ids in the scope, the p_span events
-- of its scope said just before it (step -1, -2, …) and just after it (step 1, 2, …), in
-- (occurred_at, id) order, which breaks ties between the messages of one batch. Each side is
-- one ordered, limited read of events_scope_idx (backward, then forward); its condition is a
-- range on occurred_at plus a tie-break, so that the index's bound applies.
-- STABLE SQL returning a set, called in FROM: the planner inlines it into the arm's statement.
CREATE OR REPLACE FUNCTION haki_neighbour_turns(
    p_project_id text, p_subject_id text, p_source_ids uuid[], p_span integer)
RETURNS TABLE (source_id uuid, id uuid, kind text, payload jsonb, occurred_at timestamptz,
               embedding vector, step bigint)
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT source.id, near.id, near.kind, near.payload, near.occurred_at, near.embedding,
           near.step
    FROM events AS source
    CROSS JOIN LATERAL (
        SELECT earlier.*,
               -row_number() OVER (ORDER BY earlier.occurred_at DESC, earlier.id DESC) AS step
        FROM (SELECT e.id, e.kind, e.payload, e.occurred_at, e.embedding
              FROM events AS e
              WHERE e.project_id = source.project_id AND e.subject_id = source.subject_id
                AND e.occurred_at <= source.occurred_at
                AND (e.occurred_at < source.occurred_at OR e.id < source.id)
              ORDER BY e.occurred_at DESC, e.id DESC
              LIMIT p_span) AS earlier
        UNION ALL
        SELECT later.*, row_number() OVER (ORDER BY later.occurred_at, later.id)
        FROM (SELECT e.id, e.kind, e.payload, e.occurred_at, e.embedding
              FROM events AS e
              WHERE e.project_id = source.project_id AND e.subject_id = source.subject_id
                AND e.occurred_at >= source.occurred_at
                AND (e.occurred_at > source.occurred_at OR e.id > source.id)
              ORDER BY e.occurred_at, e.id
              LIMIT p_span) AS later
    ) AS near
    WHERE source.project_id = p_project_id AND source.subject_id = p_subject_id
      AND source.id = ANY (p_source_ids)
$$;
REVOKE ALL ON FUNCTION haki_neighbour_turns(text, text, uuid[], integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION haki_neighbour_turns(text, text, uuid[], integer) TO haki_app;
