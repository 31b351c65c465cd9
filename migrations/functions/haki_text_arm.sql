-- The text arm: the facts and events of the scope that share the question's rarest terms
-- (haki_idf_search), ranked by idf, each with its stored embedding (the caller computes its
-- distance) and what the packet and the rules need; then the turns around its events (item
-- 'neighbour', with the source they belong to and their step from it). With p_thread_id, its
-- events are those of that thread (its facts stay the subject's). Every event row carries its
-- thread and its place in the order written (seq).
--
-- Terms: the question's lexemes in both forms the stored search vectors hold ('simple': the
-- words of long texts and facts; 'english' stems: short texts), one-letter ones and
-- p_stopwords dropped, the p_max_terms longest kept.
-- plan_cache_mode = force_generic_plan: the statement's own plan does not depend on the
-- values (haki_idf_search plans its search with the actual terms), so one plan is cached per
-- connection and reused, and no call pays for planning it again. It needs no query vector, so
-- it runs while the question is embedded.
CREATE OR REPLACE FUNCTION haki_text_arm(
    p_project_id text, p_subject_id text, p_query text, p_stopwords text[],
    p_max_terms integer, p_use_text_arm boolean, p_use_episodes boolean,
    p_text_candidates integer, p_text_top_k integer,
    p_horizon_slow_seconds double precision, p_horizon_volatile_seconds double precision,
    p_horizon_ephemeral_seconds double precision, p_excerpt_chars integer,
    p_neighbour_span integer, p_use_neighbours boolean, p_thread_id text)
RETURNS TABLE (item text, id uuid, text_arm_rank bigint, text_rank double precision,
               embedding vector, predicate text, value jsonb, confidence real,
               valid_from timestamptz, source_event_ids uuid[], volatility text,
               conflict_open boolean, horizon_passed boolean, kind text, payload jsonb,
               occurred_at timestamptz, source_id uuid, step bigint, thread_id text,
               seq bigint)
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan
SET search_path = pg_catalog, public, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH terms AS (
        SELECT array_agg(term) AS terms
        FROM (SELECT term
              FROM unnest(tsvector_to_array(to_tsvector('simple', p_query)
                                            || to_tsvector('english', p_query))) AS term
              WHERE char_length(term) > 1 AND NOT (term = ANY (p_stopwords))
              ORDER BY char_length(term) DESC, term
              LIMIT p_max_terms) AS kept
    ),
    arm AS MATERIALIZED (
        SELECT hit.item, hit.id, hit.score AS text_rank,
               row_number() OVER (ORDER BY hit.score DESC, hit.id) AS text_arm_rank
        FROM terms
        CROSS JOIN LATERAL haki_idf_search(p_subject_id, terms.terms, p_use_episodes,
                                           p_text_candidates, p_text_top_k, p_thread_id) AS hit
        WHERE p_use_text_arm AND NOT haki_subject_disabled(p_project_id, p_subject_id)
    ),
    sources AS (SELECT a.id FROM arm AS a WHERE a.item = 'event')
    SELECT a.item, a.id, a.text_arm_rank, a.text_rank, coalesce(f.embedding, e.embedding),
           f.predicate, f.value, f.confidence, f.valid_from, f.source_event_ids, f.volatility,
           f.id IN (SELECT c.fact_id
                    FROM haki_open_conflict_facts(p_project_id, p_subject_id) AS c(fact_id)),
           haki_horizon_passed(f.volatility,
                               coalesce(f.last_reinforced_at, f.valid_from, f.recorded_from),
                               p_horizon_slow_seconds, p_horizon_volatile_seconds,
                               p_horizon_ephemeral_seconds),
           e.kind, haki_episode_excerpt(e.payload, p_excerpt_chars), e.occurred_at,
           NULL::uuid, NULL::bigint, e.thread_id, e.seq
    FROM arm AS a
    LEFT JOIN facts AS f ON a.item = 'fact' AND f.project_id = p_project_id AND f.id = a.id
    LEFT JOIN events AS e ON a.item = 'event' AND e.project_id = p_project_id AND e.id = a.id
    UNION ALL
    SELECT 'neighbour', near.id, NULL, NULL, near.embedding, NULL, NULL, NULL, NULL, NULL,
           NULL, NULL, NULL, near.kind, haki_episode_excerpt(near.payload, p_excerpt_chars),
           near.occurred_at, near.source_id, near.step, near.thread_id, near.seq
    FROM (SELECT array_agg(s.id) AS ids FROM sources AS s) AS source
    CROSS JOIN LATERAL haki_neighbour_turns(p_project_id, p_subject_id, source.ids,
                                            p_neighbour_span) AS near
    -- A call narrowed to a thread serves none of another thread's turns.
    WHERE p_use_neighbours AND (p_thread_id IS NULL OR near.thread_id = p_thread_id);
END
$$;
REVOKE ALL ON FUNCTION haki_text_arm(
    text, text, text, text[], integer, boolean, boolean, integer, integer, double precision,
    double precision, double precision, integer, integer, boolean, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION haki_text_arm(
    text, text, text, text[], integer, boolean, boolean, integer, integer, double precision,
    double precision, double precision, integer, integer, boolean, text) TO haki_app;
