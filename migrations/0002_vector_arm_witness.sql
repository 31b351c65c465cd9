-- The vector arms take the text arm's nearest row of their kind (p_witness_id,
-- p_witness_distance) and how many rows a second graph search reads at least (p_scan_rows):
-- their files (functions/haki_nearest_facts.sql, functions/haki_nearest_events.sql) create
-- them again with these (on a fresh database they do not exist yet).
DROP FUNCTION IF EXISTS haki_nearest_facts(
    text, text, vector, integer, boolean, text, integer, integer, integer, text,
    double precision, double precision, double precision);
DROP FUNCTION IF EXISTS haki_nearest_events(
    text, text, vector, integer, boolean, boolean, text, integer, integer, integer, text,
    integer, integer, integer, boolean);
