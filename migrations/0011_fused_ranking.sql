-- The fused ranking (haki/assembler/fusion.py): a rarity-aware (BM25 idf) full-text arm over
-- facts AND events, with the statistics it needs kept on write, and the trace columns that
-- explain the fused order. The seed preset uses none of it.

-- 1. Events get the full-text column facts have had since 0004: parsed once at write time
-- ('simple': no stemming, language-neutral), from the payload's text when it has one (what the
-- excerpt shows), else from the string and number leaves of the payload. The text is cut at
-- 200,000 characters so that a pasted log can never exceed tsvector's 1 MB limit.
ALTER TABLE events ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (
    CASE WHEN jsonb_typeof(payload -> 'text') = 'string'
         THEN to_tsvector('simple'::regconfig, left(payload ->> 'text', 200000))
         ELSE jsonb_to_tsvector('simple'::regconfig, payload, '["string", "numeric"]'::jsonb)
    END
) STORED;

-- The text arm's per-term lookups: search_vector @@ term (see haki_idf_search).
CREATE INDEX events_search_vector_gin ON events USING gin (search_vector);

-- 2. Statistics for the inverse document frequency, per scope, kept on write by the
-- statement-level triggers below — never computed by scanning a scope at query time.
-- text_scope_stats: how many documents (active facts, events) a scope holds;
-- text_term_stats: in how many of them each lexeme occurs. Rows whose counts fall to zero are
-- deleted, so forgetting a subject leaves none of its words behind. (Counts are deltas summed
-- on write, hence no CHECK >= 0: an upsert's proposed row may carry a negative delta.)
CREATE TABLE text_scope_stats (
    project_id text NOT NULL,
    subject_id text NOT NULL,
    fact_docs  bigint NOT NULL DEFAULT 0,
    event_docs bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (project_id, subject_id)
);

CREATE TABLE text_term_stats (
    project_id text NOT NULL,
    subject_id text NOT NULL,
    term       text NOT NULL,
    fact_docs  bigint NOT NULL DEFAULT 0,
    event_docs bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (project_id, subject_id, term)
);

-- Tenant content (the words of a scope): only the owner's functions below read or write them;
-- the runtime role has no privilege on either table.
ALTER TABLE text_scope_stats ENABLE ROW LEVEL SECURITY;
ALTER TABLE text_scope_stats FORCE ROW LEVEL SECURITY;
ALTER TABLE text_term_stats ENABLE ROW LEVEL SECURITY;
ALTER TABLE text_term_stats FORCE ROW LEVEL SECURITY;
CREATE POLICY admin_all ON text_scope_stats TO haki_admin USING (true) WITH CHECK (true);
CREATE POLICY admin_all ON text_term_stats TO haki_admin USING (true) WITH CHECK (true);

-- Adds (p_signs = 1) or removes (-1) documents to the statistics of their scopes. Net deltas
-- only: an UPDATE that leaves a row's words alone adds and removes the same lexemes, which
-- cancel. Rows are upserted in key order, so concurrent writers lock them in the same order.
CREATE FUNCTION haki_text_stats_apply(
    p_item text, p_projects text[], p_subjects text[], p_vectors tsvector[], p_signs integer[])
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    v_fact integer := CASE WHEN p_item = 'fact' THEN 1 ELSE 0 END;
    v_event integer := CASE WHEN p_item = 'event' THEN 1 ELSE 0 END;
    v_zero_projects text[];
    v_zero_subjects text[];
    v_zero_terms text[];
BEGIN
    WITH docs AS (
        SELECT * FROM unnest(p_projects, p_subjects, p_vectors, p_signs)
            AS d(project_id, subject_id, v, sign)
    ), delta AS (
        SELECT project_id, subject_id, sum(sign) AS docs
        FROM docs GROUP BY project_id, subject_id
        HAVING sum(sign) <> 0
    )
    INSERT INTO text_scope_stats AS s (project_id, subject_id, fact_docs, event_docs)
    SELECT project_id, subject_id, v_fact * docs, v_event * docs
    FROM delta ORDER BY project_id, subject_id
    ON CONFLICT (project_id, subject_id) DO UPDATE SET
        fact_docs = s.fact_docs + EXCLUDED.fact_docs,
        event_docs = s.event_docs + EXCLUDED.event_docs;

    WITH docs AS (
        SELECT * FROM unnest(p_projects, p_subjects, p_vectors, p_signs)
            AS d(project_id, subject_id, v, sign)
    ), delta AS (
        SELECT d.project_id, d.subject_id, lexeme AS term, sum(d.sign) AS docs
        FROM docs AS d CROSS JOIN unnest(tsvector_to_array(d.v)) AS lexeme
        GROUP BY d.project_id, d.subject_id, lexeme
        HAVING sum(d.sign) <> 0
    ), upserted AS (
        INSERT INTO text_term_stats AS s (project_id, subject_id, term, fact_docs, event_docs)
        SELECT project_id, subject_id, term, v_fact * docs, v_event * docs
        FROM delta ORDER BY project_id, subject_id, term
        ON CONFLICT (project_id, subject_id, term) DO UPDATE SET
            fact_docs = s.fact_docs + EXCLUDED.fact_docs,
            event_docs = s.event_docs + EXCLUDED.event_docs
        RETURNING s.project_id, s.subject_id, s.term, s.fact_docs, s.event_docs
    )
    SELECT array_agg(project_id), array_agg(subject_id), array_agg(term)
    INTO v_zero_projects, v_zero_subjects, v_zero_terms
    FROM upserted WHERE fact_docs = 0 AND event_docs = 0;

    IF v_zero_terms IS NOT NULL THEN
        DELETE FROM text_term_stats AS s
        USING unnest(v_zero_projects, v_zero_subjects, v_zero_terms) AS z(project_id, subject_id, term)
        WHERE s.project_id = z.project_id AND s.subject_id = z.subject_id AND s.term = z.term
          AND s.fact_docs = 0 AND s.event_docs = 0;
    END IF;
    DELETE FROM text_scope_stats AS s
    USING (SELECT DISTINCT project_id, subject_id FROM unnest(p_projects, p_subjects)
           AS d(project_id, subject_id)) AS z
    WHERE s.project_id = z.project_id AND s.subject_id = z.subject_id
      AND s.fact_docs = 0 AND s.event_docs = 0;
END
$$;
REVOKE ALL ON FUNCTION haki_text_stats_apply(text, text[], text[], tsvector[], integer[])
    FROM PUBLIC;

-- The triggers: once per statement, over its transition tables (a batch of 100 events costs one
-- upsert per scope and lexeme, not 100). SECURITY DEFINER so that the runtime role needs no
-- privilege on the statistics; a trigger function cannot be called directly. Only active facts
-- count (the text arm serves nothing else); every event counts. An UPDATE removes the old rows
-- and adds the new ones (a status change, an edited value, a moved row all come out right).
CREATE FUNCTION haki_fact_text_stats() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM haki_text_stats_apply('fact', array_agg(project_id), array_agg(subject_id),
                                      array_agg(search_vector), array_agg(1))
        FROM new_rows WHERE status = 'active';
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM haki_text_stats_apply('fact', array_agg(project_id), array_agg(subject_id),
                                      array_agg(search_vector), array_agg(-1))
        FROM old_rows WHERE status = 'active';
    ELSE
        PERFORM haki_text_stats_apply('fact', array_agg(project_id), array_agg(subject_id),
                                      array_agg(search_vector), array_agg(sign))
        FROM (SELECT project_id, subject_id, search_vector, 1 AS sign
              FROM new_rows WHERE status = 'active'
              UNION ALL
              SELECT project_id, subject_id, search_vector, -1
              FROM old_rows WHERE status = 'active') AS changed;
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION haki_event_text_stats() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM haki_text_stats_apply('event', array_agg(project_id), array_agg(subject_id),
                                      array_agg(search_vector), array_agg(1))
        FROM new_rows;
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM haki_text_stats_apply('event', array_agg(project_id), array_agg(subject_id),
                                      array_agg(search_vector), array_agg(-1))
        FROM old_rows;
    ELSE
        PERFORM haki_text_stats_apply('event', array_agg(project_id), array_agg(subject_id),
                                      array_agg(search_vector), array_agg(sign))
        FROM (SELECT project_id, subject_id, search_vector, 1 AS sign FROM new_rows
              UNION ALL
              SELECT project_id, subject_id, search_vector, -1 FROM old_rows) AS changed;
    END IF;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION haki_fact_text_stats() FROM PUBLIC;
REVOKE ALL ON FUNCTION haki_event_text_stats() FROM PUBLIC;

-- One trigger per event kind: a trigger with transition tables fires for one event only.
CREATE TRIGGER facts_text_stats_insert AFTER INSERT ON facts
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION haki_fact_text_stats();
CREATE TRIGGER facts_text_stats_update AFTER UPDATE ON facts
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION haki_fact_text_stats();
CREATE TRIGGER facts_text_stats_delete AFTER DELETE ON facts
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION haki_fact_text_stats();
CREATE TRIGGER events_text_stats_insert AFTER INSERT ON events
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION haki_event_text_stats();
CREATE TRIGGER events_text_stats_update AFTER UPDATE ON events
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION haki_event_text_stats();
CREATE TRIGGER events_text_stats_delete AFTER DELETE ON events
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION haki_event_text_stats();

-- The memory already stored.
SELECT haki_text_stats_apply('fact', array_agg(project_id), array_agg(subject_id),
                             array_agg(search_vector), array_agg(1))
FROM facts WHERE status = 'active';
SELECT haki_text_stats_apply('event', array_agg(project_id), array_agg(subject_id),
                             array_agg(search_vector), array_agg(1))
FROM events;

-- 3. The text arm of the fused ranking, as a function the runtime role calls: SECURITY DEFINER
-- for the reason 0008 gives (under row-level security the GIN index cannot serve the leaky @@
-- operator for haki_app), applying the tenant boundary itself with the policy's expression and
-- returning ids and scores only.
--
-- Term rarity over the scope's active facts and (p_with_events) events pooled, one collection:
--   score(d) = Σ_{t ∈ q, d holds t} idf(t),   idf(t) = ln(1 + (N − df + 0.5) / (df + 0.5)),
-- BM25's idf, N and df from text_scope_stats / text_term_stats (primary-key lookups). BM25's
-- term-frequency saturation and length normalisation were measured and left out: neither was
-- worth 0.005 recall on the dev sets (docs/benchmarks.md), and the term frequencies would cost
-- an unnest of every candidate's tsvector.
-- Candidates: for each query term, at most p_cap rows holding it, by the GIN indexes
-- (facts_search_vector_gin, 0004; events_search_vector_gin, above). A term rarer than the cap
-- brings every row holding it; a commoner one — whose idf is small — its first p_cap. Each
-- candidate is then scored on every query term it holds (@@ on its own tsvector).
CREATE FUNCTION haki_idf_search(
    p_subject_id text, p_terms text[], p_with_events boolean, p_cap integer, p_limit integer)
RETURNS TABLE (item text, id uuid, score double precision)
LANGUAGE plpgsql STABLE SECURITY DEFINER ROWS 32
SET search_path = public, pg_temp
AS $$
DECLARE
    v_project text := NULLIF(current_setting('haki.project_id', true), '');
BEGIN
    IF v_project IS NULL OR coalesce(cardinality(p_terms), 0) = 0 THEN
        RETURN;
    END IF;
    -- EXECUTE: a one-shot plan with the actual values, as in haki_text_search (0008).
    RETURN QUERY EXECUTE $sql$
        WITH scope AS (
            SELECT s.fact_docs + CASE WHEN $3 THEN s.event_docs ELSE 0 END AS docs
            FROM text_scope_stats AS s
            WHERE s.project_id = $1 AND s.subject_id = $2
        ),
        terms AS (
            SELECT plainto_tsquery('simple', t.term) AS q, t.fact_docs,
                   CASE WHEN $3 THEN t.event_docs ELSE 0 END AS event_docs,
                   ln(1 + (scope.docs - df.n + 0.5)::float8 / (df.n + 0.5)) AS idf
            FROM scope
            JOIN text_term_stats AS t ON t.project_id = $1 AND t.subject_id = $2
            CROSS JOIN LATERAL (SELECT t.fact_docs + CASE WHEN $3 THEN t.event_docs ELSE 0 END
                                AS n) AS df
            WHERE t.term = ANY ($4) AND df.n > 0
        ),
        matched AS (
            SELECT DISTINCT ON (hit.item, hit.id) hit.item, hit.id, hit.v
            FROM terms AS t
            CROSS JOIN LATERAL (
                (SELECT 'fact'::text AS item, f.id, f.search_vector AS v
                 FROM facts AS f
                 WHERE t.fact_docs > 0 AND f.project_id = $1 AND f.subject_id = $2
                   AND f.status = 'active' AND (f.valid_to IS NULL OR f.valid_to > now())
                   AND f.search_vector @@ t.q
                 LIMIT $5)
                UNION ALL
                (SELECT 'event'::text, e.id, e.search_vector
                 FROM events AS e
                 WHERE t.event_docs > 0 AND e.project_id = $1 AND e.subject_id = $2
                   AND e.search_vector @@ t.q
                 LIMIT $5)
            ) AS hit
            ORDER BY hit.item, hit.id
        )
        SELECT m.item, m.id, sum(t.idf) FILTER (WHERE m.v @@ t.q)
        FROM matched AS m
        CROSS JOIN terms AS t
        GROUP BY m.item, m.id
        ORDER BY 3 DESC, m.id
        LIMIT $6
    $sql$ USING v_project, p_subject_id, p_with_events, p_terms, p_cap, p_limit;
END
$$;
REVOKE ALL ON FUNCTION haki_idf_search(text, text[], boolean, integer, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION haki_idf_search(text, text[], boolean, integer, integer)
    TO haki_app;

-- 4. The trace explains the fused order: each arm's rank (NULL: the arm did not return the
-- row), and for an episode brought in as the neighbour of another, that episode. The fused
-- score is the row's `score` (the score the candidates were ordered by, in either preset).
ALTER TABLE context_traces
    ADD COLUMN vector_rank integer CHECK (vector_rank > 0),
    ADD COLUMN text_arm_rank integer CHECK (text_arm_rank > 0),
    ADD COLUMN expanded_from uuid;
ALTER TABLE context_traces DROP CONSTRAINT context_traces_reason_code_check;
ALTER TABLE context_traces ADD CONSTRAINT context_traces_reason_code_check CHECK (reason_code IN (
    'top_score', 'multi_hop_expansion', 'episode_match', 'neighbour_expansion',
    'over_budget', 'volatility_expired', 'below_relevance_floor', 'conflict_open'));
