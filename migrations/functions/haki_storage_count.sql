-- The storage counts of facts and events, kept on write: one trigger function for both
-- tables and both kinds of statement (a fact or an event, in or out, from the statement's
-- transition table). Every writer is counted, the owner's `haki load` and erasures included.
CREATE OR REPLACE FUNCTION haki_storage_count()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
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

SELECT haki_statement_triggers('haki_storage_count', 'storage', ARRAY['insert', 'delete']);
