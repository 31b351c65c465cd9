-- What the full-text arm finds in an event:
--
-- 1. A message is searched by who said it: a question that names a person ("What did Ana say
--    about …?") finds that person's turns. The name of a message's speaker (a payload whose
--    `role` is a message role and whose `name` is a string: what POST /v1/events stores for
--    `messages`) joins its text, as it joins the embedded text (haki.text.event_text). A
--    record's own `role` and `name` fields were already searched: a payload without `text` is
--    searched by all its string leaves.
-- 2. A short text (under 500 characters: a chat turn, a note) is stemmed (PostgreSQL's
--    'english' configuration: "hiking" is stored as "hike", English stop words dropped), so a
--    question's other forms of its words find it; a longer text keeps its words as they are
--    ('simple'), since stems matched long documents (an assistant's replies, pasted logs) too
--    broadly. The text arm looks a question's words up in both forms (haki_text_arm). French
--    text goes through the same rules, stemmed lightly or kept.
--
-- PostgreSQL 16 cannot change a generated column's expression in place: the column is
-- rebuilt (its GIN index, and any scope's own text index, with it; the scope-index reconciler
-- builds those again), then the text arm's event statistics are counted again from the new
-- column, since rebuilding a column fires no trigger.
ALTER TABLE events DROP COLUMN search_vector;
ALTER TABLE events ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (
    CASE WHEN jsonb_typeof(payload -> 'text') = 'string'
         THEN to_tsvector(CASE WHEN char_length(payload ->> 'text') < 500
                               THEN 'english'::regconfig ELSE 'simple'::regconfig END,
                          CASE WHEN payload ->> 'role' IN ('user', 'assistant', 'system', 'tool')
                                    AND jsonb_typeof(payload -> 'name') = 'string'
                               THEN (payload ->> 'name') || ' '
                               ELSE ''
                          END || left(payload ->> 'text', 200000))
         ELSE jsonb_to_tsvector('simple'::regconfig, payload, '["string", "numeric"]'::jsonb)
    END
) STORED;

CREATE INDEX events_search_vector_gin ON events USING gin (search_vector);

UPDATE text_term_stats SET event_docs = 0 WHERE event_docs <> 0;
INSERT INTO text_term_stats AS s (project_id, subject_id, term, event_docs)
SELECT e.project_id, e.subject_id, lexeme, count(*)
FROM events AS e
CROSS JOIN unnest(tsvector_to_array(e.search_vector)) AS lexeme
GROUP BY e.project_id, e.subject_id, lexeme
ORDER BY e.project_id, e.subject_id, lexeme
ON CONFLICT (project_id, subject_id, term) DO UPDATE SET event_docs = EXCLUDED.event_docs;
DELETE FROM text_term_stats WHERE fact_docs = 0 AND event_docs = 0;
