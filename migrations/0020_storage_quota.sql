-- Per-project storage quotas: how many facts and events each project holds, kept by the
-- database itself so that a write can be checked against its project's quota without counting
-- rows (HAKI_MAX_FACTS_PER_PROJECT / HAKI_MAX_EVENTS_PER_PROJECT, haki.memory.quota).
--
-- A project's count is the sum of a few slot rows. Every statement that inserts or deletes
-- facts or events adds its change to one slot of the project that no other transaction holds
-- (FOR UPDATE SKIP LOCKED), taking a new slot when all are busy: a writer never waits for
-- another's counter, so the counter adds no lock to the writes' order and no deadlock. A
-- project has about as many slots as it ever had concurrent writers; its count is one index
-- scan over them. Every writer is counted, the owner's `haki load` and the erasures included.

CREATE TABLE project_storage (
    project_id text    NOT NULL CHECK (char_length(project_id) BETWEEN 1 AND 128),
    slot       integer NOT NULL,
    facts      bigint  NOT NULL DEFAULT 0,
    events     bigint  NOT NULL DEFAULT 0,
    PRIMARY KEY (project_id, slot)
);
ALTER TABLE project_storage ENABLE ROW LEVEL SECURITY;
ALTER TABLE project_storage FORCE ROW LEVEL SECURITY;
CREATE POLICY admin_all ON project_storage TO haki_admin USING (true) WITH CHECK (true);
CREATE POLICY tenant_isolation ON project_storage TO haki_app
    USING (project_id = (SELECT haki_tenant()))
    WITH CHECK (project_id = (SELECT haki_tenant()));
-- The runtime role reads its project's count; the triggers (SECURITY DEFINER) write it.
GRANT SELECT ON project_storage TO haki_app;

-- Adds (project, facts, events) changes to a free slot of each project.
CREATE FUNCTION haki_storage_apply(p_projects text[], p_facts bigint[], p_events bigint[])
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = public, pg_temp
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

-- One trigger function for both tables and both kinds of statement: a fact or an event, in
-- or out, from the statement's transition table.
CREATE FUNCTION haki_storage_count() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    v_sign bigint := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
    v_fact bigint := CASE TG_TABLE_NAME WHEN 'facts' THEN 1 ELSE 0 END;
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM haki_storage_apply(array_agg(project_id), array_agg(v_sign * v_fact),
                                   array_agg(v_sign * (1 - v_fact)))
        FROM new_rows HAVING count(*) > 0;
    ELSE
        PERFORM haki_storage_apply(array_agg(project_id), array_agg(v_sign * v_fact),
                                   array_agg(v_sign * (1 - v_fact)))
        FROM old_rows HAVING count(*) > 0;
    END IF;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION haki_storage_count() FROM PUBLIC;

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['facts', 'events'] LOOP
        EXECUTE format('CREATE TRIGGER %1$s_storage_insert AFTER INSERT ON %1$I '
                       'REFERENCING NEW TABLE AS new_rows '
                       'FOR EACH STATEMENT EXECUTE FUNCTION haki_storage_count()', t);
        EXECUTE format('CREATE TRIGGER %1$s_storage_delete AFTER DELETE ON %1$I '
                       'REFERENCING OLD TABLE AS old_rows '
                       'FOR EACH STATEMENT EXECUTE FUNCTION haki_storage_count()', t);
    END LOOP;
END
$$;

-- The memory already stored: one slot per project.
INSERT INTO project_storage (project_id, slot, facts, events)
SELECT project_id, 0, sum(facts), sum(events)
FROM (SELECT project_id, count(*) AS facts, 0 AS events FROM facts GROUP BY project_id
      UNION ALL
      SELECT project_id, 0, count(*) FROM events GROUP BY project_id) AS stored
GROUP BY project_id;
