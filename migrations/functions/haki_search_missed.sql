-- Whether a vector arm's graph search may have lost its question (haki_nearest_facts says
-- why each test is here): it brought back fewer than p_wanted rows; or its rows, in the
-- order the scan returned them (p_ids, p_distances), are not nearest first; or the witness
-- (a row of the scope at p_witness_distance from the question, NULL when there is none) is
-- nearer than the farthest row kept, yet not among them.
CREATE OR REPLACE FUNCTION haki_search_missed(
    p_ids uuid[], p_distances double precision[], p_wanted integer, p_witness_id uuid,
    p_witness_distance double precision)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN coalesce(cardinality(p_distances), 0) < p_wanted
    OR EXISTS (SELECT FROM generate_subscripts(p_distances, 1) AS i
               WHERE i > 1 AND p_distances[i] < p_distances[i - 1])
    OR coalesce(p_witness_distance < (SELECT max(d) FROM unnest(p_distances) AS d)
                AND NOT p_witness_id = ANY (p_ids), false);
REVOKE ALL ON FUNCTION haki_search_missed(
    uuid[], double precision[], integer, uuid, double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION haki_search_missed(
    uuid[], double precision[], integer, uuid, double precision) TO haki_app;
