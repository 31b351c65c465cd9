-- The trace's action codes: the position (1-based) of an action in this array is the code
-- stored in context_traces.actions. The only place the codes are mapped.
CREATE OR REPLACE FUNCTION haki_trace_actions()
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT ARRAY['included', 'excluded', 'blocked']
$$;
GRANT EXECUTE ON FUNCTION haki_trace_actions() TO haki_app, haki_stats;
