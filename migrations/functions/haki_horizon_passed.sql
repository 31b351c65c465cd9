-- The volatility rule (docs/spec.md §4.8): whether a fact of this volatility, whose horizon
-- clock is p_clock (coalesce(last_reinforced_at, valid_from, recorded_from)), has gone longer
-- than its horizon without reinforcement. A stable fact never does. The caller decides what
-- it means (a slow fact is served flagged, a volatile or ephemeral one is excluded).
-- STABLE SQL (now()): the planner inlines it into the arms' statements.
CREATE OR REPLACE FUNCTION haki_horizon_passed(
    p_volatility text, p_clock timestamptz, p_slow_seconds double precision,
    p_volatile_seconds double precision, p_ephemeral_seconds double precision)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT CASE p_volatility
               WHEN 'stable' THEN false
               ELSE p_clock + make_interval(secs => CASE p_volatility
                                                        WHEN 'slow' THEN p_slow_seconds
                                                        WHEN 'volatile' THEN p_volatile_seconds
                                                        ELSE p_ephemeral_seconds
                                                    END) < now()
           END
$$;
REVOKE ALL ON FUNCTION haki_horizon_passed(text, timestamptz, double precision,
                                           double precision, double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION haki_horizon_passed(text, timestamptz, double precision,
                                              double precision, double precision) TO haki_app;
