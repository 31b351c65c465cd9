-- The text arm's statistics (text_scope_stats, text_term_stats), kept on write.
--
-- Adds (p_signs = 1) or removes (-1) documents to the statistics of their scopes. Net deltas
-- only: an UPDATE that leaves a row's words alone adds and removes the same lexemes, which
-- cancel. Rows are upserted in key order, so concurrent writers lock them in the same order.
-- Rows whose counts reach zero are deleted. Called by the statement-level triggers of
-- haki_text_stats; nobody else may.
CREATE OR REPLACE FUNCTION haki_text_stats_apply(
    p_item text, p_projects text[], p_subjects text[], p_vectors tsvector[], p_signs integer[])
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
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
        USING unnest(v_zero_projects, v_zero_subjects, v_zero_terms)
            AS z(project_id, subject_id, term)
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
