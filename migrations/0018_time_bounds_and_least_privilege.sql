-- Stored times within the documented range, and each role holding only what it uses.
--
-- 1. Times. The API accepts instants from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z
--    (haki.models.Timestamp); a row written before that check, or by hand, can hold one that
--    PostgreSQL keeps but a Python datetime cannot (year 0 or 10000 once in UTC, ±infinity),
--    and reading it failed every context call and facts listing of its subject. Such values are
--    moved to the nearest bound, keeping every fact's valid_from strictly before its valid_to
--    (valid_from is held below the upper bound and valid_to above the lower one by one
--    microsecond), then CHECK constraints refuse any new one, whoever writes it.
--
-- 2. Privileges (docs/security.md, "Roles and privileges", lists the result; a test compares
--    it with the catalog). The stats role reads of context_calls only the columns its rollups
--    aggregate, never a stored query or a served packet, and no longer deletes rollups (the
--    aggregation upserts them). The runtime role loses UPDATE on events: the API never changes
--    a stored event (the owner's `haki load` does, as the owner).

-- (A NULL stays NULL: CASE, not least/greatest, which skip NULLs.)
UPDATE events
SET occurred_at = CASE WHEN occurred_at < '1970-01-01 00:00:00+00' THEN '1970-01-01 00:00:00+00'::timestamptz
               WHEN occurred_at > '9999-12-31 23:59:59.999999+00' THEN '9999-12-31 23:59:59.999999+00'::timestamptz ELSE occurred_at END
WHERE occurred_at NOT BETWEEN '1970-01-01 00:00:00+00' AND '9999-12-31 23:59:59.999999+00';

UPDATE facts
SET valid_from = CASE WHEN valid_from < '1970-01-01 00:00:00+00' THEN '1970-01-01 00:00:00+00'::timestamptz
                      WHEN valid_from > '9999-12-31 23:59:59.999998+00' THEN '9999-12-31 23:59:59.999998+00'::timestamptz ELSE valid_from END,
    valid_to = CASE WHEN valid_to < '1970-01-01 00:00:00.000001+00' THEN '1970-01-01 00:00:00.000001+00'::timestamptz
                    WHEN valid_to > '9999-12-31 23:59:59.999999+00' THEN '9999-12-31 23:59:59.999999+00'::timestamptz ELSE valid_to END,
    recorded_from = CASE WHEN recorded_from < '1970-01-01 00:00:00+00' THEN '1970-01-01 00:00:00+00'::timestamptz
                         WHEN recorded_from > '9999-12-31 23:59:59.999999+00' THEN '9999-12-31 23:59:59.999999+00'::timestamptz ELSE recorded_from END,
    recorded_to = CASE WHEN recorded_to < '1970-01-01 00:00:00+00' THEN '1970-01-01 00:00:00+00'::timestamptz
                       WHEN recorded_to > '9999-12-31 23:59:59.999999+00' THEN '9999-12-31 23:59:59.999999+00'::timestamptz ELSE recorded_to END,
    last_reinforced_at = CASE WHEN last_reinforced_at < '1970-01-01 00:00:00+00' THEN '1970-01-01 00:00:00+00'::timestamptz
                              WHEN last_reinforced_at > '9999-12-31 23:59:59.999999+00' THEN '9999-12-31 23:59:59.999999+00'::timestamptz ELSE last_reinforced_at END
WHERE valid_from NOT BETWEEN '1970-01-01 00:00:00+00' AND '9999-12-31 23:59:59.999998+00'
   OR valid_to NOT BETWEEN '1970-01-01 00:00:00.000001+00' AND '9999-12-31 23:59:59.999999+00'
   OR recorded_from NOT BETWEEN '1970-01-01 00:00:00+00' AND '9999-12-31 23:59:59.999999+00'
   OR recorded_to NOT BETWEEN '1970-01-01 00:00:00+00' AND '9999-12-31 23:59:59.999999+00'
   OR last_reinforced_at NOT BETWEEN '1970-01-01 00:00:00+00' AND '9999-12-31 23:59:59.999999+00';

ALTER TABLE events
    ADD CONSTRAINT events_occurred_at_range CHECK (
        occurred_at BETWEEN '1970-01-01 00:00:00+00' AND '9999-12-31 23:59:59.999999+00');

ALTER TABLE facts
    ADD CONSTRAINT facts_valid_from_range CHECK (
        valid_from BETWEEN '1970-01-01 00:00:00+00' AND '9999-12-31 23:59:59.999999+00'),
    ADD CONSTRAINT facts_valid_to_range CHECK (
        valid_to BETWEEN '1970-01-01 00:00:00+00' AND '9999-12-31 23:59:59.999999+00'),
    ADD CONSTRAINT facts_recorded_from_range CHECK (
        recorded_from BETWEEN '1970-01-01 00:00:00+00' AND '9999-12-31 23:59:59.999999+00'),
    ADD CONSTRAINT facts_recorded_to_range CHECK (
        recorded_to BETWEEN '1970-01-01 00:00:00+00' AND '9999-12-31 23:59:59.999999+00'),
    ADD CONSTRAINT facts_last_reinforced_at_range CHECK (
        last_reinforced_at BETWEEN '1970-01-01 00:00:00+00' AND '9999-12-31 23:59:59.999999+00');

REVOKE SELECT ON context_calls FROM haki_stats;
GRANT SELECT (project_id, subject_id, created_at, latency_ms, facts_served, token_count)
    ON context_calls TO haki_stats;
REVOKE DELETE ON stats_rollups FROM haki_stats;

REVOKE UPDATE ON events FROM haki_app;
