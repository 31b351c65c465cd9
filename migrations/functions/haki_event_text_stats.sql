-- The text statistics of events, kept on write: once per statement, over its transition
-- tables (a batch of 100 rows costs one upsert per scope and lexeme, not 100). Every event counts.
-- An UPDATE removes the old rows and adds the new ones (a status change, an edited value, a
-- moved row all come out right). SECURITY DEFINER so that the runtime role needs no privilege
-- on the statistics; a trigger function cannot be called directly. One trigger per event: a
-- trigger with transition tables fires for one event only.
CREATE OR REPLACE FUNCTION haki_event_text_stats()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM haki_text_stats_apply('event', array_agg(project_id), array_agg(subject_id),
                                      array_agg(search_vector), array_agg(1))
        FROM new_rows;
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM haki_text_stats_apply('event', array_agg(project_id), array_agg(subject_id),
                                      array_agg(search_vector), array_agg(-1))
        FROM old_rows;
    ELSE
        PERFORM haki_text_stats_apply('event', array_agg(project_id), array_agg(subject_id),
                                      array_agg(search_vector), array_agg(sign))
        FROM (SELECT project_id, subject_id, search_vector, 1 AS sign FROM new_rows
              UNION ALL
              SELECT project_id, subject_id, search_vector, -1 FROM old_rows) AS changed;
    END IF;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION haki_event_text_stats() FROM PUBLIC;

CREATE OR REPLACE TRIGGER events_text_stats_insert AFTER INSERT ON events
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION haki_event_text_stats();
CREATE OR REPLACE TRIGGER events_text_stats_update AFTER UPDATE ON events
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION haki_event_text_stats();
CREATE OR REPLACE TRIGGER events_text_stats_delete AFTER DELETE ON events
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION haki_event_text_stats();
