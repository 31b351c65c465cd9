-- Makes p_function an AFTER ... FOR EACH STATEMENT trigger of facts and of events for each of
-- p_events ('insert', 'update', 'delete'): one trigger per table and event, named
-- <table>_<p_name>_<event>, with the transition tables its event has (new_rows, old_rows; a
-- trigger with transition tables fires for one event only). The statistics kept on write
-- (haki_text_stats, haki_storage_count) declare their triggers with it when their files are
-- applied; a change here re-declares nothing until those files run again.
CREATE OR REPLACE FUNCTION haki_statement_triggers(
    p_function text, p_name text, p_events text[])
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v_table text;
    v_event text;
BEGIN
    FOREACH v_table IN ARRAY ARRAY['facts', 'events']
    LOOP
        FOREACH v_event IN ARRAY p_events
        LOOP
            EXECUTE format(
                'CREATE OR REPLACE TRIGGER %I AFTER %s ON %I REFERENCING %s '
                'FOR EACH STATEMENT EXECUTE FUNCTION %I()',
                v_table || '_' || p_name || '_' || v_event, v_event, v_table,
                CASE v_event WHEN 'insert' THEN 'NEW TABLE AS new_rows'
                             WHEN 'update' THEN 'OLD TABLE AS old_rows NEW TABLE AS new_rows'
                             WHEN 'delete' THEN 'OLD TABLE AS old_rows' END,
                p_function);
        END LOOP;
    END LOOP;
END
$$;
REVOKE ALL ON FUNCTION haki_statement_triggers(text, text, text[]) FROM PUBLIC;
