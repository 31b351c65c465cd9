-- The key the event ids derived from messages are keyed with (haki/memory/events.py,
-- message_event_id): each project holds a random one (projects.message_id_key), and an id is a
-- hash of the key with the subject and the message, so ids differ across projects and nobody
-- without the key can test a guessed subject and message against an id. The runtime role reads
-- its own project's key only, through the key it acts for (haki_tenant()).
CREATE OR REPLACE FUNCTION haki_message_id_key()
RETURNS uuid
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
    SELECT p.message_id_key FROM public.projects AS p WHERE p.project_id = public.haki_tenant()
$$;
REVOKE ALL ON FUNCTION haki_message_id_key() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION haki_message_id_key() TO haki_app;
