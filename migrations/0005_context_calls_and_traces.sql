-- One row per context call (the exact packet served) and one per decision taken.
CREATE TABLE context_calls (
    trace_id         uuid PRIMARY KEY,
    project_id       text NOT NULL CHECK (char_length(project_id) BETWEEN 1 AND 128),
    subject_id       text NOT NULL CHECK (char_length(subject_id) BETWEEN 1 AND 128),
    query            text NOT NULL,
    purpose          text,
    budget_tokens    integer NOT NULL CHECK (budget_tokens > 0),
    packet           jsonb NOT NULL,
    token_count      integer NOT NULL CHECK (token_count >= 0),
    status           text NOT NULL CHECK (status IN ('ok', 'degraded')),
    -- Why a packet is empty: nothing in scope matched (no_memory), the recall floor gated
    -- every candidate (no_relevant_memory), or candidates were all blocked, expired or over
    -- budget (all_filtered; the warnings and the trace say which).
    empty_reason     text CHECK (empty_reason IN
                         ('no_memory', 'no_relevant_memory', 'all_filtered')),
    facts_served     integer NOT NULL CHECK (facts_served >= 0),
    episodes_served  integer NOT NULL CHECK (episodes_served >= 0),
    candidates       integer NOT NULL CHECK (candidates >= 0),
    -- Latency figures in milliseconds: embedding the query, retrieval SQL, whole call up to
    -- the trace write.
    embed_ms         real NOT NULL,
    retrieval_ms     real NOT NULL,
    latency_ms       real NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now()
);

-- Inspect and the stats tail read one scope's calls by time; the aggregation reads by time.
CREATE INDEX context_calls_scope_idx ON context_calls (project_id, subject_id, created_at);
CREATE INDEX context_calls_created_idx ON context_calls (created_at);

-- No foreign key to context_calls: the call row and its decisions are written by one statement
-- (haki/assembler/trace.py), so neither can exist without the other, and a foreign key would
-- re-check every decision row on the hot path (measured: +4.5 ms for a 116-row trace).
CREATE TABLE context_traces (
    trace_id    uuid NOT NULL,
    ordinal     integer NOT NULL CHECK (ordinal >= 0),
    project_id  text NOT NULL,
    subject_id  text NOT NULL,
    fact_id     uuid,
    event_id    uuid,
    action      text NOT NULL CHECK (action IN ('included', 'excluded', 'blocked')),
    reason_code text NOT NULL CHECK (reason_code IN (
                    'top_score', 'multi_hop_expansion', 'episode_match',
                    'over_budget', 'volatility_expired', 'below_relevance_floor',
                    'conflict_open')),
    rank        integer,
    score       real,
    similarity  real,
    text_rank   real,
    recency     real,
    tokens      integer,
    unconfirmed boolean NOT NULL DEFAULT false,
    PRIMARY KEY (trace_id, ordinal),
    CHECK ((fact_id IS NULL) <> (event_id IS NULL))
);
