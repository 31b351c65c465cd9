-- What an episode row carries of its payload: a payload with a `text` is cut to p_chars
-- characters of it, keeping a message's `role` and speaker `name` beside it (the block shows
-- both), so that a long message is never shipped whole; any other payload is returned as is.
-- IMMUTABLE SQL over its arguments: the planner inlines it into the arms' statements.
CREATE OR REPLACE FUNCTION haki_episode_excerpt(p_payload jsonb, p_chars integer)
RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN jsonb_typeof(p_payload -> 'text') = 'string'
                THEN jsonb_strip_nulls(jsonb_build_object(
                         'text', left(p_payload ->> 'text', p_chars),
                         'role', p_payload -> 'role',
                         'name', p_payload -> 'name'))
                ELSE p_payload
           END
$$;
REVOKE ALL ON FUNCTION haki_episode_excerpt(jsonb, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION haki_episode_excerpt(jsonb, integer) TO haki_app;
