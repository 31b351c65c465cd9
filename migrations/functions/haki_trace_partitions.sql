-- Trace partitions (context_calls, context_traces, call_feedback): made ahead, dropped whole
-- past retention (run by the scheduled aggregation, haki/stats/partitions.py).
--
-- Partitions for the days from p_from_day (default today, UTC) to p_ahead days past the later
-- of today and p_from_day; partitions whose day ended more than p_retention_days ago AND that
-- the stats rollup has already folded (upper bound <= stats_watermark.rolled_until) are
-- DETACHed and DROPped whole, never emptied row by row. One transaction-level advisory lock
-- serialises concurrent runs (the second waits, then finds nothing left to do): idempotent. A
-- day whose rows already sit in DEFAULT (written before its partition existed) is made as a
-- plain table, its rows moved out of DEFAULT, then attached.
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
            EXECUTE format('CREATE TABLE public.%I '
                           '(LIKE public.%I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
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

-- A new database gets its partitions for the coming week now, before the scheduled job first
-- runs (nothing is dropped: a retention of a hundred years).
SELECT haki_trace_partitions(7, 36500);
