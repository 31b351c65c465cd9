-- Every stored identifier the API can no longer name as it is. The API stores and compares
-- every identifier (project, subject, predicate, kind, idempotency key) in NFC and refuses
-- invisible and control characters in them (haki/identities.py); a row written otherwise (by
-- hand, or by a release before that rule) is reported here, never merged
-- (docs/decisions/2026-12-05-nfc-identities-reported-not-merged.md):
--
--   SELECT * FROM identity_lookalikes;
--
-- one row per (project, kind of identifier, NFC form): the stored spellings, whether one of
-- them is not NFC, holds an invisible or control character, or (predicates) mixes Latin with
-- Greek or Cyrillic letters; `spellings` of more than one element are names the API now
-- takes as one. Only the owner reads it (the runtime role has no grant: it crosses tenants).
CREATE OR REPLACE VIEW identity_lookalikes AS
WITH names (project_id, kind, name) AS (
    SELECT project_id, 'project', project_id FROM projects
    UNION SELECT project_id, 'subject', subject_id FROM facts
    UNION SELECT project_id, 'subject', subject_id FROM events
    UNION SELECT project_id, 'subject', subject_id FROM conflict_sets
    UNION SELECT project_id, 'subject', subject_id FROM disabled_subjects
    UNION SELECT project_id, 'predicate', predicate FROM facts
    UNION SELECT project_id, 'kind', kind FROM events
    UNION SELECT project_id, 'idempotency_key', idempotency_key FROM events
        WHERE idempotency_key IS NOT NULL
), flagged AS (
    SELECT project_id, kind, name, normalize(name, NFC) AS canonical,
           name IS NOT NFC NORMALIZED AS not_nfc,
           -- Unicode Cf (format: zero-width, bidi, tags, soft hyphen, BOM), C0, DEL and C1
           -- controls, line and paragraph separators.
           name ~ ('[\u0000-\u001f\u007f-\u009f\u00ad\u0600-\u0605\u061c\u06dd\u070f'
                   '\u08e2\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f'
                   '\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U0001bca0-\U0001bca3'
                   '\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]')
               AS invisible,
           kind = 'predicate' AND name ~ '[A-Za-z]' AND name ~ '[\u0370-\u03ff\u0400-\u052f]'
               AS mixed_scripts
    FROM names
)
SELECT project_id, kind, canonical,
       pg_catalog.array_agg(name ORDER BY name) AS spellings,
       pg_catalog.bool_or(not_nfc) AS not_nfc,
       pg_catalog.bool_or(invisible) AS invisible,
       pg_catalog.bool_or(mixed_scripts) AS mixed_scripts
FROM flagged
GROUP BY project_id, kind, canonical
HAVING pg_catalog.count(*) > 1 OR pg_catalog.bool_or(not_nfc OR invisible OR mixed_scripts);

REVOKE ALL ON identity_lookalikes FROM PUBLIC;
