-- The trace's reason codes: the position (1-based) of a reason in this array is the code
-- stored in context_traces.reasons. The only place the codes are mapped.
CREATE OR REPLACE FUNCTION haki_trace_reasons()
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT ARRAY['top_score', 'episode_match', 'neighbour_expansion', 'over_budget',
                 'volatility_expired', 'below_relevance_floor', 'conflict_open']
$$;
GRANT EXECUTE ON FUNCTION haki_trace_reasons() TO haki_app, haki_stats;
