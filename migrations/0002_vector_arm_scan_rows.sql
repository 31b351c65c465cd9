-- The vector arms take how many rows their graph search reads at least when their scope is a
-- slice of the graph (p_scan_rows): their files (functions/haki_nearest_facts.sql,
-- functions/haki_nearest_events.sql) create them again with it (on a fresh database they do
-- not exist yet).
DROP FUNCTION IF EXISTS haki_nearest_facts(
    text, text, vector, integer, boolean, text, integer, integer, integer, text,
    double precision, double precision, double precision);
DROP FUNCTION IF EXISTS haki_nearest_events(
    text, text, vector, integer, boolean, boolean, text, integer, integer, integer, text,
    integer, integer, integer, boolean);
