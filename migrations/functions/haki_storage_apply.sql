-- Adds (project, facts, events) changes to the storage counts (project_storage), each to a
-- slot of its project that no other transaction holds (FOR UPDATE SKIP LOCKED), taking a new
-- slot when all are busy: a writer never waits for another's counter, so the counter adds no
-- lock to the writes' order and no deadlock. A project has about as many slots as it ever had
-- concurrent writers; its count is one index scan over them. Called by haki_storage_count.
CREATE OR REPLACE FUNCTION haki_storage_apply(
    p_projects text[], p_facts bigint[], p_events bigint[])
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v_project text;
    v_facts   bigint;
    v_events  bigint;
    v_slot    integer;
BEGIN
    FOR v_project, v_facts, v_events IN
        SELECT d.project_id, sum(d.facts), sum(d.events)
        FROM unnest(p_projects, p_facts, p_events) AS d(project_id, facts, events)
        GROUP BY d.project_id
        ORDER BY d.project_id
    LOOP
        SELECT s.slot INTO v_slot FROM project_storage AS s
        WHERE s.project_id = v_project
        ORDER BY s.slot
        LIMIT 1
        FOR UPDATE SKIP LOCKED;
        IF FOUND THEN
            UPDATE project_storage SET facts = facts + v_facts, events = events + v_events
            WHERE project_id = v_project AND slot = v_slot;
        ELSE
            -- A new slot at a random number (a taken one, however unlikely, draws again).
            LOOP
                INSERT INTO project_storage (project_id, slot, facts, events)
                VALUES (v_project, floor(random() * 2147483647)::integer, v_facts, v_events)
                ON CONFLICT DO NOTHING;
                EXIT WHEN FOUND;
            END LOOP;
        END IF;
    END LOOP;
END
$$;
REVOKE ALL ON FUNCTION haki_storage_apply(text[], bigint[], bigint[]) FROM PUBLIC;
