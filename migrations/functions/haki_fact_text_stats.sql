-- The text statistics of facts, kept on write: once per statement, over its transition
-- tables (a batch of 100 rows costs one upsert per scope and lexeme, not 100). Only active
-- facts count (the text arm serves nothing else).
-- An UPDATE removes the old rows and adds the new ones (a status change, an edited value, a
-- moved row all come out right). SECURITY DEFINER so that the runtime role needs no privilege
-- on the statistics; a trigger function cannot be called directly. One trigger per event: a
-- trigger with transition tables fires for one event only.
CREATE OR REPLACE FUNCTION haki_fact_text_stats()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM haki_text_stats_apply('fact', array_agg(project_id), array_agg(subject_id),
                                      array_agg(search_vector), array_agg(1))
        FROM new_rows WHERE status = 'active';
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM haki_text_stats_apply('fact', array_agg(project_id), array_agg(subject_id),
                                      array_agg(search_vector), array_agg(-1))
        FROM old_rows WHERE status = 'active';
    ELSE
        PERFORM haki_text_stats_apply('fact', array_agg(project_id), array_agg(subject_id),
                                      array_agg(search_vector), array_agg(sign))
        FROM (SELECT project_id, subject_id, search_vector, 1 AS sign
              FROM new_rows WHERE status = 'active'
              UNION ALL
              SELECT project_id, subject_id, search_vector, -1
              FROM old_rows WHERE status = 'active') AS changed;
    END IF;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION haki_fact_text_stats() FROM PUBLIC;

CREATE OR REPLACE TRIGGER facts_text_stats_insert AFTER INSERT ON facts
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION haki_fact_text_stats();
CREATE OR REPLACE TRIGGER facts_text_stats_update AFTER UPDATE ON facts
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION haki_fact_text_stats();
CREATE OR REPLACE TRIGGER facts_text_stats_delete AFTER DELETE ON facts
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION haki_fact_text_stats();
