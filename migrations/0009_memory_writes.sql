-- The memory write API (SPEC §11): idempotent event ingestion, and the listings of facts and
-- conflict sets by scope. The statements are in haki/memory/ (events.py, facts.py,
-- conflicts.py); each names the index below that it relies on.

-- A client's idempotency key for an event (POST /v1/events). A client `id` is the other way to
-- make a delivery idempotent; a request names at most one of the two per event.
ALTER TABLE events ADD COLUMN idempotency_key text
    CHECK (char_length(idempotency_key) BETWEEN 1 AND 128);

-- POST /v1/events: `INSERT ... ON CONFLICT DO NOTHING` arbitrates on this index and on the
-- primary key, so two concurrent replays of one key write one row (the second waits for the
-- first, then writes nothing); haki/memory/events.py looks the original up by it. Per project:
-- two tenants may use the same key.
CREATE UNIQUE INDEX events_idempotency_key_idx ON events (project_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

-- GET /v1/conflicts: one scope's sets in creation order, keyset-paginated on (created_at, id)
-- whatever their status (conflict_sets_open_idx of 0003 covers open sets only); forget erases
-- a subject's sets through it too.
CREATE INDEX conflict_sets_scope_idx ON conflict_sets (project_id, subject_id, created_at, id);
