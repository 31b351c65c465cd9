-- The text statistics of facts and events, kept on write: once per statement, over its
-- transition tables (a batch of 100 rows costs one upsert per scope and lexeme, not 100).
-- Every event counts; a fact counts while it is active (the text arm serves nothing else).
-- An UPDATE removes the old rows and adds the new ones (a status change, an edited value, a
-- moved row all come out right). SECURITY DEFINER so that the runtime role needs no privilege
-- on the statistics; a trigger function cannot be called directly.
--
-- One function for both tables and their three events. Its statement reads the transition
-- tables its trigger has (an INSERT's new rows, a DELETE's old ones, an UPDATE's both) and,
-- on facts, their status, a column events lack; so it is written for the call and run with
-- EXECUTE, planned each time (a fraction of a millisecond beside the upserts it makes).
CREATE OR REPLACE FUNCTION haki_text_stats()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v_item text := CASE TG_TABLE_NAME WHEN 'facts' THEN 'fact' ELSE 'event' END;
    v_counted text := CASE v_item WHEN 'fact' THEN $q$status = 'active'$q$ ELSE 'true' END;
    v_changed text[] := '{}';
BEGIN
    IF TG_OP <> 'DELETE' THEN
        v_changed := v_changed || format(
            'SELECT project_id, subject_id, search_vector, 1 AS sign FROM new_rows WHERE %s',
            v_counted);
    END IF;
    IF TG_OP <> 'INSERT' THEN
        v_changed := v_changed || format(
            'SELECT project_id, subject_id, search_vector, -1 AS sign FROM old_rows WHERE %s',
            v_counted);
    END IF;
    EXECUTE format(
        'SELECT haki_text_stats_apply(%L, array_agg(project_id), array_agg(subject_id), '
        'array_agg(search_vector), array_agg(sign)) FROM (%s) AS changed',
        v_item, array_to_string(v_changed, ' UNION ALL '));
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION haki_text_stats() FROM PUBLIC;

SELECT haki_statement_triggers('haki_text_stats', 'text_stats',
                               ARRAY['insert', 'update', 'delete']);

-- The functions that kept each table's statistics before this one: their triggers are now
-- this function's (re-declared above under the same names), so nothing calls them. Dropped
-- here, in the transaction that replaced them, so no write ever runs without statistics.
DROP FUNCTION IF EXISTS haki_event_text_stats();
DROP FUNCTION IF EXISTS haki_fact_text_stats();
