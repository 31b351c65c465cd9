-- One row per decision of a stored trace, decoded (haki_trace_actions, haki_trace_reasons),
-- for inspect, tools and tests. security_invoker: the caller's policies apply.
CREATE OR REPLACE VIEW context_trace_decisions WITH (security_invoker = true) AS
SELECT t.trace_id, t.created_at, t.project_id, d.ordinal, d.fact_id, d.event_id,
       (haki_trace_actions())[d.action] AS action,
       (haki_trace_reasons())[d.reason] AS reason_code,
       d.rank, d.score, d.similarity, d.text_rank, d.tokens, d.unconfirmed,
       d.vector_rank, d.text_arm_rank, d.expanded_from
FROM context_traces AS t
CROSS JOIN LATERAL unnest(t.ordinals, t.fact_ids, t.event_ids, t.actions, t.reasons, t.ranks,
                          t.scores, t.similarities, t.text_ranks, t.tokens,
                          t.unconfirmed, t.vector_ranks, t.text_arm_ranks, t.expanded_from)
    AS d(ordinal, fact_id, event_id, action, reason, rank, score, similarity, text_rank,
         tokens, unconfirmed, vector_rank, text_arm_rank, expanded_from);
GRANT SELECT ON context_trace_decisions TO haki_app;
