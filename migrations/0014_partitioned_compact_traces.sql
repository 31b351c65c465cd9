-- Traces at production volume (issue 12): context_calls and context_traces range-partitioned
-- by day (UTC) on created_at, partitions made ahead and dropped past retention by
-- haki_trace_partitions() (run by the scheduled aggregation), a DEFAULT partition so that no
-- insert ever fails, and a compact trace: ONE row per call holding the call's decisions as
-- parallel arrays, with action and reason as smallint codes (haki_trace_actions(),
-- haki_trace_reasons(): the only place the codes are mapped). Measured at ~120 decisions a
-- call (benchmarks/trace_storage.py): 28,221 -> see benchmarks/results/trace_storage.json.
--
-- Why one row per call and not a narrower row per decision: a decision row pays a 24-byte
-- tuple header, a 4-byte line pointer and ~36 bytes of primary-key entry before its first
-- field, so even the narrowest one-row-per-decision layout stays above half of the old size.
--
-- Keys: the primary keys include the partition key, (trace_id, created_at). Inspect looks a
-- trace up by id: trace ids are UUIDv7 (haki/assembler/trace.py), whose first 48 bits are the
-- call's time in ms, so the reader bounds created_at to that time +- 1 hour and the planner
-- prunes to one or two day partitions (plus DEFAULT). Ids minted before 0014 (UUIDv4) are read
-- without the bound: every partition's primary key is probed.
--
-- The trace row carries the call's project_id (once per call, not per decision) so that the
-- exact tenant_isolation policy of 0013 holds on it; subject_id is the call row's alone.

-- 1. Codes: position in these arrays (1-based) is the code stored.
CREATE FUNCTION haki_trace_actions() RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ARRAY['included', 'excluded', 'blocked'];

CREATE FUNCTION haki_trace_reasons() RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ARRAY['top_score', 'multi_hop_expansion', 'episode_match', 'neighbour_expansion',
             'over_budget', 'volatility_expired', 'below_relevance_floor', 'conflict_open'];

GRANT EXECUTE ON FUNCTION haki_trace_actions(), haki_trace_reasons() TO haki_app, haki_stats;

-- 2. The old tables step aside (renamed with their indexes), the new ones take the names.
ALTER TABLE context_calls RENAME TO context_calls_0013;
ALTER TABLE context_traces RENAME TO context_traces_0013;
ALTER INDEX context_calls_pkey RENAME TO context_calls_0013_pkey;
ALTER INDEX context_calls_scope_idx RENAME TO context_calls_0013_scope_idx;
ALTER INDEX context_calls_created_idx RENAME TO context_calls_0013_created_idx;
ALTER INDEX context_traces_pkey RENAME TO context_traces_0013_pkey;

CREATE TABLE context_calls (
    trace_id         uuid NOT NULL,
    project_id       text NOT NULL CHECK (char_length(project_id) BETWEEN 1 AND 128),
    subject_id       text NOT NULL CHECK (char_length(subject_id) BETWEEN 1 AND 128),
    query            text NOT NULL,
    purpose          text,
    budget_tokens    integer NOT NULL CHECK (budget_tokens > 0),
    packet           jsonb NOT NULL,
    token_count      integer NOT NULL CHECK (token_count >= 0),
    status           text NOT NULL CHECK (status IN ('ok', 'degraded')),
    empty_reason     text CHECK (empty_reason IN
                         ('no_memory', 'no_relevant_memory', 'all_filtered')),
    facts_served     integer NOT NULL CHECK (facts_served >= 0),
    episodes_served  integer NOT NULL CHECK (episodes_served >= 0),
    candidates       integer NOT NULL CHECK (candidates >= 0),
    embed_ms         real NOT NULL,
    retrieval_ms     real NOT NULL,
    latency_ms       real NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (trace_id, created_at)
) PARTITION BY RANGE (created_at);
CREATE INDEX context_calls_scope_idx ON context_calls (project_id, subject_id, created_at);
CREATE INDEX context_calls_created_idx ON context_calls (created_at);

-- Decision i of the call is element i of every array (all of one length, the call's
-- candidates); NULL elements where the old row had NULL.
CREATE TABLE context_traces (
    trace_id        uuid NOT NULL,
    created_at      timestamptz NOT NULL,
    project_id      text NOT NULL,
    ordinals        integer[] NOT NULL,
    fact_ids        uuid[] NOT NULL,
    event_ids       uuid[] NOT NULL,
    actions         smallint[] NOT NULL CHECK (actions <@ '{1,2,3}'::smallint[]),
    reasons         smallint[] NOT NULL CHECK (reasons <@ '{1,2,3,4,5,6,7,8}'::smallint[]),
    ranks           integer[] NOT NULL,
    scores          real[] NOT NULL,
    similarities    real[] NOT NULL,
    text_ranks      real[] NOT NULL,
    recencies       real[] NOT NULL,
    tokens          integer[] NOT NULL,
    unconfirmed     boolean[] NOT NULL,
    vector_ranks    integer[] NOT NULL,
    text_arm_ranks  integer[] NOT NULL,
    expanded_from   uuid[] NOT NULL,
    PRIMARY KEY (trace_id, created_at)
) PARTITION BY RANGE (created_at);
-- Array columns TOAST-compress (pglz) once a row passes ~2 kB: the codes and ranks shrink.

CREATE TABLE context_calls_default PARTITION OF context_calls DEFAULT;
CREATE TABLE context_traces_default PARTITION OF context_traces DEFAULT;

-- 3. Row-level security, as 0007 + 0013 (policies on a partitioned table apply to every
--    partition reached through it; the partitions themselves get no grant to the runtime
--    role, so it can only reach rows through the parent).
ALTER TABLE context_calls ENABLE ROW LEVEL SECURITY;
ALTER TABLE context_calls FORCE ROW LEVEL SECURITY;
ALTER TABLE context_traces ENABLE ROW LEVEL SECURITY;
ALTER TABLE context_traces FORCE ROW LEVEL SECURITY;
CREATE POLICY admin_all ON context_calls TO haki_admin USING (true) WITH CHECK (true);
CREATE POLICY admin_all ON context_traces TO haki_admin USING (true) WITH CHECK (true);
CREATE POLICY tenant_isolation ON context_calls TO haki_app
    USING (project_id = (SELECT haki_tenant())) WITH CHECK (project_id = (SELECT haki_tenant()));
CREATE POLICY tenant_isolation ON context_traces TO haki_app
    USING (project_id = (SELECT haki_tenant())) WITH CHECK (project_id = (SELECT haki_tenant()));
CREATE POLICY stats_read ON context_calls FOR SELECT TO haki_stats USING (true);

GRANT SELECT, INSERT, DELETE ON context_calls, context_traces TO haki_app;
GRANT UPDATE (packet) ON context_calls TO haki_app;
-- Forgetting a fact removes its decisions from the calls' arrays (haki/memory/forget.py).
GRANT UPDATE (ordinals, fact_ids, event_ids, actions, reasons, ranks, scores, similarities,
              text_ranks, recencies, tokens, unconfirmed, vector_ranks, text_arm_ranks,
              expanded_from) ON context_traces TO haki_app;
GRANT SELECT ON context_calls TO haki_stats;

-- 4. One row per decision, decoded, for tools and tests (security_invoker: the caller's
--    policies apply). Inspect reads through it too.
CREATE VIEW context_trace_decisions WITH (security_invoker = true) AS
SELECT t.trace_id, t.created_at, t.project_id, d.ordinal, d.fact_id, d.event_id,
       (haki_trace_actions())[d.action] AS action, (haki_trace_reasons())[d.reason] AS reason_code,
       d.rank, d.score, d.similarity, d.text_rank, d.recency, d.tokens, d.unconfirmed,
       d.vector_rank, d.text_arm_rank, d.expanded_from
FROM context_traces AS t
CROSS JOIN LATERAL unnest(t.ordinals, t.fact_ids, t.event_ids, t.actions, t.reasons, t.ranks,
                          t.scores, t.similarities, t.text_ranks, t.recencies, t.tokens,
                          t.unconfirmed, t.vector_ranks, t.text_arm_ranks, t.expanded_from)
    AS d(ordinal, fact_id, event_id, action, reason, rank, score, similarity, text_rank,
         recency, tokens, unconfirmed, vector_rank, text_arm_rank, expanded_from);
GRANT SELECT ON context_trace_decisions TO haki_app;

-- 5. Maintenance: partitions for the days from p_from_day (default today, UTC) to p_ahead days
--    past the later of today and p_from_day; partitions whose day ended more than p_retention_days ago AND that the stats
--    rollup has already folded (upper bound <= stats_watermark.rolled_until) are DETACHed and
--    DROPped whole, never emptied row by row. One transaction-level advisory lock serialises
--    concurrent runs (the second waits, then finds nothing left to do): idempotent. A day
--    whose rows already sit in DEFAULT (written before its partition existed) is made as a
--    plain table, its rows moved out of DEFAULT, then attached.
CREATE FUNCTION haki_trace_partitions(
    p_ahead integer, p_retention_days integer, p_from_day date DEFAULT NULL)
RETURNS TABLE (partitions_created integer, partitions_dropped integer, default_rows bigint)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v_today date := (now() AT TIME ZONE 'UTC')::date;
    v_day date;
    v_table text;
    v_part text;
    v_lo timestamptz;
    v_hi timestamptz;
    v_watermark timestamptz;
    v_created integer := 0;
    v_dropped integer := 0;
    v_default bigint;
    r record;
BEGIN
    IF p_ahead < 0 OR p_retention_days < 1 THEN
        RAISE EXCEPTION 'p_ahead must be >= 0 and p_retention_days >= 1';
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('haki_trace_partitions'));

    FOR v_day IN SELECT generate_series(coalesce(p_from_day, v_today),
                                        greatest(v_today, p_from_day) + p_ahead,
                                        interval '1 day')::date
    LOOP
        v_lo := (v_day::timestamp AT TIME ZONE 'UTC');
        v_hi := ((v_day + 1)::timestamp AT TIME ZONE 'UTC');
        FOREACH v_table IN ARRAY ARRAY['context_calls', 'context_traces'] LOOP
            v_part := v_table || '_p' || to_char(v_day, 'YYYYMMDD');
            CONTINUE WHEN to_regclass('public.' || v_part) IS NOT NULL;
            EXECUTE format('CREATE TABLE public.%I (LIKE public.%I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
                           v_part, v_table);
            EXECUTE format('WITH moved AS (DELETE FROM %I WHERE created_at >= $1 '
                           'AND created_at < $2 RETURNING *) INSERT INTO %I SELECT * FROM moved',
                           v_table || '_default', v_part) USING v_lo, v_hi;
            EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
                           v_table, v_part, v_lo, v_hi);
            v_created := v_created + 1;
        END LOOP;
    END LOOP;

    SELECT rolled_until INTO v_watermark FROM stats_watermark;
    FOR r IN SELECT c.relname, to_date(right(c.relname, 8), 'YYYYMMDD') AS day
             FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid
             WHERE i.inhparent IN ('context_calls'::regclass, 'context_traces'::regclass)
               AND c.relname ~ '^context_(calls|traces)_p[0-9]{8}$'
    LOOP
        v_hi := ((r.day + 1)::timestamp AT TIME ZONE 'UTC');
        CONTINUE WHEN r.day + 1 > v_today - p_retention_days;
        -- Never drop calls the rollup has not folded yet (the overview would lose them).
        CONTINUE WHEN r.relname LIKE 'context_calls%'
                  AND (v_watermark IS NULL OR v_hi > v_watermark);
        EXECUTE format('ALTER TABLE %I DETACH PARTITION %I',
                       CASE WHEN r.relname LIKE 'context_calls%' THEN 'context_calls'
                            ELSE 'context_traces' END, r.relname);
        EXECUTE format('DROP TABLE %I', r.relname);
        v_dropped := v_dropped + 1;
    END LOOP;

    SELECT (SELECT count(*) FROM context_calls_default)
           + (SELECT count(*) FROM context_traces_default) INTO v_default;
    RETURN QUERY SELECT v_created, v_dropped, v_default;
END
$$;
REVOKE ALL ON FUNCTION haki_trace_partitions(integer, integer, date) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION haki_trace_partitions(integer, integer, date) TO haki_stats;

-- 6. The existing rows move in: a partition for every day that holds calls, then the rows.
SELECT * FROM haki_trace_partitions(
    7, 36500, (SELECT (min(created_at) AT TIME ZONE 'UTC')::date FROM context_calls_0013));

INSERT INTO context_calls
SELECT trace_id, project_id, subject_id, query, purpose, budget_tokens, packet, token_count,
       status, empty_reason, facts_served, episodes_served, candidates, embed_ms, retrieval_ms,
       latency_ms, created_at
FROM context_calls_0013;

INSERT INTO context_traces
SELECT t.trace_id, c.created_at, t.project_id,
       array_agg(t.ordinal ORDER BY t.ordinal), array_agg(t.fact_id ORDER BY t.ordinal),
       array_agg(t.event_id ORDER BY t.ordinal),
       array_agg(array_position(haki_trace_actions(), t.action)::smallint ORDER BY t.ordinal),
       array_agg(array_position(haki_trace_reasons(), t.reason_code)::smallint
                 ORDER BY t.ordinal),
       array_agg(t.rank ORDER BY t.ordinal), array_agg(t.score ORDER BY t.ordinal),
       array_agg(t.similarity ORDER BY t.ordinal), array_agg(t.text_rank ORDER BY t.ordinal),
       array_agg(t.recency ORDER BY t.ordinal), array_agg(t.tokens ORDER BY t.ordinal),
       array_agg(t.unconfirmed ORDER BY t.ordinal), array_agg(t.vector_rank ORDER BY t.ordinal),
       array_agg(t.text_arm_rank ORDER BY t.ordinal),
       array_agg(t.expanded_from ORDER BY t.ordinal)
FROM context_traces_0013 AS t
JOIN context_calls_0013 AS c ON c.trace_id = t.trace_id
GROUP BY t.trace_id, c.created_at, t.project_id;

DROP TABLE context_traces_0013;
DROP TABLE context_calls_0013;
