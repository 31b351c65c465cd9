-- The turns around episodes: for each event of p_source_ids in the scope, the p_span events
-- of its scope said just before it (step -1, -2, …) and just after it (step 1, 2, …), in the
-- order said: (occurred_at, seq), seq the order written, which keeps the messages of one batch
-- in their order. Each side is one ordered, limited read of events_scope_idx (backward, then
-- forward); its condition is a range on occurred_at plus a tie-break, so that the index's
-- bound applies. (A filter on the source's thread was measured: the planner cannot estimate
-- it and scans the whole scope instead, 30× the database time on a 20,000-event scope.)
-- STABLE SQL returning a set, called in FROM: the planner inlines it into the arm's statement.
CREATE OR REPLACE FUNCTION haki_neighbour_turns(
    p_project_id text, p_subject_id text, p_source_ids uuid[], p_span integer)
RETURNS TABLE (source_id uuid, id uuid, kind text, payload jsonb, occurred_at timestamptz,
               embedding vector, step bigint, thread_id text, seq bigint)
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT source.id, near.id, near.kind, near.payload, near.occurred_at, near.embedding,
           near.step, near.thread_id, near.seq
    FROM events AS source
    CROSS JOIN LATERAL (
        SELECT earlier.id, earlier.kind, earlier.payload, earlier.occurred_at, earlier.embedding,
               -row_number() OVER (ORDER BY earlier.occurred_at DESC, earlier.seq DESC) AS step,
               earlier.thread_id, earlier.seq
        FROM (SELECT e.id, e.kind, e.payload, e.occurred_at, e.embedding, e.thread_id, e.seq
              FROM events AS e
              WHERE e.project_id = source.project_id AND e.subject_id = source.subject_id
                    AND e.occurred_at <= source.occurred_at
                AND (e.occurred_at < source.occurred_at OR e.seq < source.seq)
              ORDER BY e.occurred_at DESC, e.seq DESC
              LIMIT p_span) AS earlier
        UNION ALL
        SELECT later.id, later.kind, later.payload, later.occurred_at, later.embedding,
               row_number() OVER (ORDER BY later.occurred_at, later.seq),
               later.thread_id, later.seq
        FROM (SELECT e.id, e.kind, e.payload, e.occurred_at, e.embedding, e.thread_id, e.seq
              FROM events AS e
              WHERE e.project_id = source.project_id AND e.subject_id = source.subject_id
                    AND e.occurred_at >= source.occurred_at
                AND (e.occurred_at > source.occurred_at OR e.seq > source.seq)
              ORDER BY e.occurred_at, e.seq
              LIMIT p_span) AS later
    ) AS near
    WHERE source.project_id = p_project_id AND source.subject_id = p_subject_id
      AND source.id = ANY (p_source_ids)
$$;
REVOKE ALL ON FUNCTION haki_neighbour_turns(text, text, uuid[], integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION haki_neighbour_turns(text, text, uuid[], integer) TO haki_app;
