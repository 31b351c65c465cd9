-- Conversations: an episode's speaker reaches the packet.
--
-- A message is stored as an event whose payload holds its `text`, its `role` (user, assistant,
-- system, tool) and an optional speaker `name`. The candidate functions of 0017 cut a payload
-- with a `text` down to that text (`p_excerpt_chars` characters) so that a long message is not
-- shipped whole; they now keep its `role` and `name` beside it, which the rendered block shows.
--
-- haki_episode_excerpt is that cut, in one place. The two functions that return episodes are
-- redefined from their current definitions with each inline cut replaced by a call of it
-- (the same signatures, options, grants and bodies otherwise); the migration fails if the cut
-- is not found exactly four times, so a changed definition is never half rewritten.

CREATE FUNCTION haki_episode_excerpt(p_payload jsonb, p_chars integer)
RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN pg_catalog.jsonb_typeof(p_payload -> 'text') = 'string'
    THEN pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
        'text', pg_catalog.left(p_payload ->> 'text', p_chars),
        'role', p_payload -> 'role',
        'name', p_payload -> 'name'))
    ELSE p_payload END;
REVOKE ALL ON FUNCTION haki_episode_excerpt(jsonb, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION haki_episode_excerpt(jsonb, integer) TO haki_app;

DO $migration$
DECLARE
    cut CONSTANT text := 'CASE WHEN jsonb_typeof\((\w+)\.payload -> ''text''\) = ''string''\s+'
        'THEN jsonb_build_object\(''text'', left\(\1\.payload ->> ''text'', p_excerpt_chars\)\)'
        '\s+ELSE \1\.payload END';
    routine regprocedure;
    definition text;
    rewritten text;
    found integer := 0;
BEGIN
    FOR routine IN
        SELECT p.oid::regprocedure FROM pg_proc AS p
        WHERE p.proname IN ('haki_text_arm', 'haki_nearest_events')
          AND p.pronamespace = 'public'::regnamespace
    LOOP
        definition := pg_get_functiondef(routine);
        found := found + (SELECT count(*) FROM regexp_matches(definition, cut, 'g'));
        rewritten := regexp_replace(
            definition, cut, 'haki_episode_excerpt(\1.payload, p_excerpt_chars)', 'g');
        EXECUTE rewritten;
    END LOOP;
    IF found <> 4 THEN
        RAISE EXCEPTION 'expected the episode cut 4 times in the candidate functions, found %',
            found;
    END IF;
END
$migration$;
