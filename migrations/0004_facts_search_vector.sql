-- Full-text arm: the tsvector is computed once at write time (GENERATED ... STORED), never
-- re-parsed per query. 'simple' configuration: no stemming, no stop words, language-neutral
-- (facts are French and English). The predicate ("preferred_language") is split on '_' by the
-- parser and weighted A; the string and number leaves of the value are weighted D.
ALTER TABLE facts ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('simple'::regconfig, predicate), 'A')
    || jsonb_to_tsvector('simple'::regconfig, value, '["string", "numeric"]'::jsonb)
) STORED;

-- Phase 1, full-text arm: search_vector @@ tsquery, ranked by ts_rank_cd.
CREATE INDEX facts_search_vector_gin ON facts USING gin (search_vector);

-- OR- and AND-aggregates of tsqueries: the full-text arm ORs the question's terms
-- (websearch_to_tsquery ANDs every word, so natural-language questions would match almost
-- nothing) and always ranks the facts holding all of them. Built from the functions behind the
-- tsquery `||` and `&&` operators, so no query text is ever re-parsed or quoted.
CREATE AGGREGATE tsquery_or_agg(tsquery) (SFUNC = tsquery_or, STYPE = tsquery);
CREATE AGGREGATE tsquery_and_agg(tsquery) (SFUNC = tsquery_and, STYPE = tsquery);
