-- Threads, and a conversation in the order it was said.
--
-- 1. events.thread_id: the conversation thread an event belongs to (optional, the rules of
--    subject_id). A context call may narrow its episodes to one thread; the turns around an
--    episode are those of its own thread.
-- 2. events.seq: the order events were written, one number per event. The messages of one
--    batch often share a time (the server's, when they give none); (occurred_at, seq) is the
--    order they were said everywhere: the packet, GET /v1/events, the turns around an episode.
--    An identity column: the runtime role needs no grant on its sequence.
-- 3. events_scope_idx gains seq, so a scope's events are read in that order by the index (the
--    listing's keyset, the turns around an episode).
-- 4. The functions that read events take p_thread_id and return each event's thread and seq
--    (functions/haki_idf_search.sql, haki_neighbour_turns.sql, haki_text_arm.sql,
--    haki_nearest_events.sql): their former signatures are dropped here, and the runner
--    creates the new ones from their files.

ALTER TABLE events
    ADD COLUMN thread_id text CHECK (char_length(thread_id) BETWEEN 1 AND 128),
    ADD COLUMN seq bigint GENERATED ALWAYS AS IDENTITY;

DROP INDEX events_scope_idx;
-- One scope's episodes in the order said: the turns around an episode (haki_neighbour_turns),
-- the exact nearest-episode scan of a small scope, GET /v1/events, the stats.
CREATE INDEX events_scope_idx ON events (project_id, subject_id, occurred_at, seq);

DROP FUNCTION IF EXISTS haki_text_arm(
    text, text, text, text[], integer, boolean, boolean, integer, integer, double precision,
    double precision, double precision, integer, integer, boolean);
DROP FUNCTION IF EXISTS haki_nearest_events(
    text, text, vector, integer, boolean, boolean, text, integer, integer, integer, text,
    integer, integer, integer, boolean);
DROP FUNCTION IF EXISTS haki_neighbour_turns(text, text, uuid[], integer);
DROP FUNCTION IF EXISTS haki_idf_search(text, text[], boolean, integer, integer);
