-- The text arm's search: the scope's active facts and (p_with_events) events holding the
-- query's rarest terms, scored by the idf of every query term they hold.
--
-- Why SECURITY DEFINER: under row-level security PostgreSQL only lets LEAKPROOF operators into
-- an index condition, and the tsvector match `@@` is not leakproof: run as haki_app, it is
-- never answered by the GIN indexes (a scan of the whole table instead). So this function runs
-- as the owner and applies the tenant boundary itself (haki_tenant(): the project of the key
-- the transaction presents, never another's, nothing without one), returning ids and scores
-- only; the caller joins back under row-level security.
--
-- Term rarity over the scope's active facts and events pooled, one collection:
--   score(d) = Σ_{t ∈ q, d holds t} idf(t),   idf(t) = ln(1 + (N − df + 0.5) / (df + 0.5)),
-- BM25's idf, N and df from text_scope_stats / text_term_stats (primary-key lookups). BM25's
-- term-frequency saturation and length normalisation were measured and left out (neither was
-- worth 0.005 recall on the dev sets). Candidates: the rows holding the query's rarest terms —
-- terms taken in ascending document frequency while their frequencies add up to at most
-- p_candidates (the rarest always), ORed into one tsquery, at most p_candidates rows per
-- table. A row holding only common terms scores little anyway. With p_thread_id, the events
-- are those of that thread (the idf stays the scope's).
CREATE OR REPLACE FUNCTION haki_idf_search(
    p_subject_id text, p_terms text[], p_with_events boolean, p_candidates integer,
    p_limit integer, p_thread_id text)
RETURNS TABLE (item text, id uuid, score double precision)
LANGUAGE plpgsql STABLE SECURITY DEFINER ROWS 32
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    -- The tenant boundary, applied here because the function runs as the owner.
    v_project text := haki_tenant();
    v_docs bigint;
    v_terms text[];
    v_idf float8[];
    v_seek tsquery;
BEGIN
    IF v_project IS NULL OR coalesce(cardinality(p_terms), 0) = 0 THEN
        RETURN;
    END IF;
    -- N: text_scope_stats primary key.
    SELECT s.fact_docs + CASE WHEN p_with_events THEN s.event_docs ELSE 0 END INTO v_docs
    FROM text_scope_stats AS s
    WHERE s.project_id = v_project AND s.subject_id = p_subject_id;
    IF coalesce(v_docs, 0) = 0 THEN
        RETURN;
    END IF;
    -- The query's terms the scope holds (text_term_stats primary key), rarest first, their
    -- idf, and the OR of those that seek the candidates.
    SELECT array_agg(known.term ORDER BY known.df, known.term),
           array_agg(ln(1 + (v_docs - known.df + 0.5)::float8 / (known.df + 0.5))
                     ORDER BY known.df, known.term),
           tsquery_or_agg(plainto_tsquery('simple', known.term) ORDER BY known.df, known.term)
               FILTER (WHERE known.position = 1 OR known.running <= p_candidates)
    INTO v_terms, v_idf, v_seek
    FROM (
        SELECT t.term, df.n AS df,
               sum(df.n) OVER (ORDER BY df.n, t.term) AS running,
               row_number() OVER (ORDER BY df.n, t.term) AS position
        FROM text_term_stats AS t
        CROSS JOIN LATERAL (SELECT t.fact_docs + CASE WHEN p_with_events THEN t.event_docs
                                                      ELSE 0 END AS n) AS df
        WHERE t.project_id = v_project AND t.subject_id = p_subject_id
          AND t.term = ANY (p_terms) AND df.n > 0
    ) AS known;
    IF v_terms IS NULL THEN
        RETURN;
    END IF;
    -- EXECUTE plans with the actual values (a one-shot plan), so the planner sees how common
    -- the seeking terms are: a term held by a tenth of a big scope is read by a scan that
    -- stops at p_candidates rows, a rare one through the GIN index. A plan made for unknown
    -- parameters always builds the full GIN bitmap. The statement text is constant; every
    -- value is a parameter.
    RETURN QUERY EXECUTE $sql$
        WITH terms AS (
            SELECT plainto_tsquery('simple', t.term) AS q, t.idf
            FROM unnest($4::text[], $5::float8[]) AS t(term, idf)
        ),
        matched AS (
            (SELECT 'fact'::text AS item, f.id, f.search_vector AS v
             FROM facts AS f
             WHERE f.project_id = $1 AND f.subject_id = $2
               AND f.status = 'active' AND (f.valid_to IS NULL OR f.valid_to > now())
               AND f.search_vector @@ $6
             LIMIT $7)
            UNION ALL
            (SELECT 'event'::text, e.id, e.search_vector
             FROM events AS e
             WHERE $3 AND e.project_id = $1 AND e.subject_id = $2 AND e.search_vector @@ $6
               AND ($9::text IS NULL OR e.thread_id = $9)
             LIMIT $7)
        )
        SELECT m.item, m.id, sum(t.idf) FILTER (WHERE m.v @@ t.q)
        FROM matched AS m
        CROSS JOIN terms AS t
        GROUP BY m.item, m.id
        ORDER BY 3 DESC, m.id
        LIMIT $8
    $sql$ USING v_project, p_subject_id, p_with_events, v_terms, v_idf, v_seek, p_candidates,
                p_limit, p_thread_id;
END
$$;
REVOKE ALL ON FUNCTION haki_idf_search(text, text[], boolean, integer, integer, text)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION haki_idf_search(text, text[], boolean, integer, integer, text)
    TO haki_app;
