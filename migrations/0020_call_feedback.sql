-- Feedback on a context call (POST /v1/calls/{trace_id}/feedback, docs/spec.md §14): which
-- served items the answer used, which memory of the call's subject should have been served,
-- a verdict and a short note; one row per (call, source), a repeat replaces it.
--
-- Lifetime: a feedback row lives exactly as long as its call. The table is range-partitioned
-- by day on the call's created_at, like context_calls and context_traces (0014), and
-- haki_trace_partitions() (redefined below) makes and drops its day partitions with theirs:
-- a call's day partition is never dropped while its feedback stays behind, and dropping it
-- never waits on row-by-row deletes. No foreign key to context_calls: the primary key of a
-- call does not hold its project (0014), and a key that did would cost every context call one
-- more index entry; the write checks the call in its tenant scope instead, and the erasure
-- (haki/memory/forget.py) removes the rows with the subject or the ids with the fact.
--
-- The note is tenant content: the stats role reads every column but it.

CREATE TABLE call_feedback (
    project_id      text NOT NULL CHECK (char_length(project_id) BETWEEN 1 AND 128),
    trace_id        uuid NOT NULL,
    call_created_at timestamptz NOT NULL,
    source          text NOT NULL CHECK (source IN ('agent', 'person')),
    subject_id      text NOT NULL CHECK (char_length(subject_id) BETWEEN 1 AND 128),
    -- Fact and event ids, as the client gave them (deduplicated, in order).
    used            uuid[] NOT NULL,
    missing         uuid[] NOT NULL,
    verdict         text CHECK (verdict IN ('helpful', 'unhelpful', 'wrong')),
    note            text CHECK (char_length(note) <= 1000),
    -- Last written (or redacted by an erasure): the aggregation re-folds the hours whose
    -- feedback changed after it last ran (haki/stats/aggregation.py).
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, trace_id, call_created_at, source)
) PARTITION BY RANGE (call_created_at);
-- A subject's feedback (erasure, the eval-set export) and a project's by call time (the
-- console's list of calls with a missing report).
CREATE INDEX call_feedback_scope_idx ON call_feedback (project_id, subject_id, call_created_at);
CREATE INDEX call_feedback_project_idx ON call_feedback (project_id, call_created_at);
-- What changed since the aggregation last ran, across projects.
CREATE INDEX call_feedback_updated_idx ON call_feedback (updated_at);
CREATE TABLE call_feedback_default PARTITION OF call_feedback DEFAULT;

ALTER TABLE call_feedback ENABLE ROW LEVEL SECURITY;
ALTER TABLE call_feedback FORCE ROW LEVEL SECURITY;
CREATE POLICY admin_all ON call_feedback TO haki_admin USING (true) WITH CHECK (true);
CREATE POLICY tenant_isolation ON call_feedback TO haki_app
    USING (project_id = (SELECT haki_tenant())) WITH CHECK (project_id = (SELECT haki_tenant()));
CREATE POLICY stats_read ON call_feedback FOR SELECT TO haki_stats USING (true);

-- The runtime role writes and replaces feedback, and the erasure removes it or cuts an erased
-- fact's id out of it; the stats role reads what the rollups count, never the note.
GRANT SELECT, INSERT, DELETE ON call_feedback TO haki_app;
GRANT UPDATE (used, missing, verdict, note, updated_at) ON call_feedback TO haki_app;
GRANT SELECT (project_id, subject_id, trace_id, call_created_at, source, used, missing, verdict,
              updated_at) ON call_feedback TO haki_stats;
-- The share of served items used counts episodes served as well as facts; a call is joined
-- with its feedback by its id.
GRANT SELECT (trace_id, episodes_served) ON context_calls TO haki_stats;

-- Rollups gain the feedback of the hour's calls (a call counts once, whatever its sources:
-- its used and missing ids are the union of theirs).
ALTER TABLE stats_rollups
    ADD COLUMN calls_with_feedback integer NOT NULL DEFAULT 0 CHECK (calls_with_feedback >= 0),
    ADD COLUMN items_served_with_feedback integer NOT NULL DEFAULT 0
        CHECK (items_served_with_feedback >= 0),
    ADD COLUMN items_used integer NOT NULL DEFAULT 0 CHECK (items_used >= 0),
    ADD COLUMN tokens_with_feedback bigint NOT NULL DEFAULT 0 CHECK (tokens_with_feedback >= 0),
    ADD COLUMN calls_with_missing integer NOT NULL DEFAULT 0 CHECK (calls_with_missing >= 0),
    ADD COLUMN items_missing integer NOT NULL DEFAULT 0 CHECK (items_missing >= 0);
-- Feedback written (updated_at) before this instant is in the rollups.
ALTER TABLE stats_watermark ADD COLUMN feedback_until timestamptz;

-- An erasure's receipt counts the feedback it removed or redacted.
ALTER TABLE erasure_receipts
    ADD COLUMN call_feedback integer NOT NULL DEFAULT 0 CHECK (call_feedback >= 0);

-- haki_trace_partitions() of 0014, redefined: call_feedback's day partitions are made and
-- dropped with those of context_calls and context_traces (and, like the calls', only once the
-- rollup has folded their day). Otherwise unchanged.
CREATE OR REPLACE FUNCTION haki_trace_partitions(
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
    v_key text;
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
        FOREACH v_table IN ARRAY ARRAY['context_calls', 'context_traces', 'call_feedback'] LOOP
            v_part := v_table || '_p' || to_char(v_day, 'YYYYMMDD');
            CONTINUE WHEN to_regclass('public.' || v_part) IS NOT NULL;
            v_key := CASE WHEN v_table = 'call_feedback' THEN 'call_created_at'
                          ELSE 'created_at' END;
            EXECUTE format('CREATE TABLE public.%I (LIKE public.%I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
                           v_part, v_table);
            EXECUTE format('WITH moved AS (DELETE FROM %I WHERE %I >= $1 '
                           'AND %I < $2 RETURNING *) INSERT INTO %I SELECT * FROM moved',
                           v_table || '_default', v_key, v_key, v_part) USING v_lo, v_hi;
            EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
                           v_table, v_part, v_lo, v_hi);
            v_created := v_created + 1;
        END LOOP;
    END LOOP;

    SELECT rolled_until INTO v_watermark FROM stats_watermark;
    FOR r IN SELECT c.relname, p.relname AS parent,
                    to_date(right(c.relname, 8), 'YYYYMMDD') AS day
             FROM pg_inherits AS i
             JOIN pg_class AS c ON c.oid = i.inhrelid
             JOIN pg_class AS p ON p.oid = i.inhparent
             WHERE i.inhparent IN ('context_calls'::regclass, 'context_traces'::regclass,
                                   'call_feedback'::regclass)
               AND c.relname ~ '^(context_calls|context_traces|call_feedback)_p[0-9]{8}$'
    LOOP
        v_hi := ((r.day + 1)::timestamp AT TIME ZONE 'UTC');
        CONTINUE WHEN r.day + 1 > v_today - p_retention_days;
        -- Never drop calls (or their feedback) the rollup has not folded yet (the overview
        -- would lose them).
        CONTINUE WHEN r.parent IN ('context_calls', 'call_feedback')
                  AND (v_watermark IS NULL OR v_hi > v_watermark);
        EXECUTE format('ALTER TABLE %I DETACH PARTITION %I', r.parent, r.relname);
        EXECUTE format('DROP TABLE %I', r.relname);
        v_dropped := v_dropped + 1;
    END LOOP;

    SELECT (SELECT count(*) FROM context_calls_default)
           + (SELECT count(*) FROM context_traces_default)
           + (SELECT count(*) FROM call_feedback_default) INTO v_default;
    RETURN QUERY SELECT v_created, v_dropped, v_default;
END
$$;
REVOKE ALL ON FUNCTION haki_trace_partitions(integer, integer, date) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION haki_trace_partitions(integer, integer, date) TO haki_stats;

-- call_feedback gets the day partitions context_calls has (from its oldest call's day on).
SELECT * FROM haki_trace_partitions(
    7, 36500, (SELECT (min(created_at) AT TIME ZONE 'UTC')::date FROM context_calls));
