-- The schema: roles, tables, indexes, row-level security and privileges.
--
-- Tables and data live in numbered migrations (this one, then each change as a new file);
-- every function, and the policies, triggers and views that exist to call one, live in
-- migrations/functions/ (one file a function), applied after the numbered migrations whenever
-- a file's checksum changes (haki/db/migrate.py). A numbered migration never refers to them.
--
-- Keys: `project_id` leads every primary key and unique index of tenant data, and every
-- foreign key between tenant tables includes it, so that each table can be distributed by
-- project (docs/scaling.md). `projects` and `api_keys` are the control plane: a distributed
-- engine keeps them as reference tables (a key is found by its hash before its project is
-- known).

-- 1. Roles (passwords are never set here):
--   haki_admin  NOLOGIN group. Its members (the migrating owner, the admin CLI) pass every
--               row-level policy. The user running migrations joins it below.
--   haki_app    the runtime role of the API functions: LOGIN, not superuser, not table owner,
--               no BYPASSRLS. Sees exactly the project of the API key its transaction presents.
--   haki_stats  the scheduled aggregation: reads the columns of context calls its rollups
--               need, writes the rollups. Never used by the API functions.
-- On Amazon RDS the login roles authenticate with IAM tokens (rds_iam) through RDS Proxy.
CREATE EXTENSION IF NOT EXISTS vector;

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'haki_admin') THEN
        CREATE ROLE haki_admin NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'haki_app') THEN
        CREATE ROLE haki_app LOGIN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'haki_stats') THEN
        CREATE ROLE haki_stats LOGIN;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'rds_iam') THEN
        GRANT rds_iam TO haki_app, haki_stats;
    END IF;
END
$$;
-- Least privilege, asserted whatever the roles were before.
ALTER ROLE haki_app NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS INHERIT;
ALTER ROLE haki_stats NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS INHERIT;
ALTER ROLE haki_admin NOLOGIN NOREPLICATION NOBYPASSRLS;

GRANT haki_admin TO CURRENT_USER;
GRANT USAGE ON SCHEMA public TO haki_app, haki_stats;
-- Nobody but the owner creates objects in the schema (the default since PostgreSQL 15; an
-- upgraded database may still grant it).
REVOKE CREATE ON SCHEMA public FROM PUBLIC;

-- 2. Tenancy: a project belongs to one org; a key to a project of its own org.
CREATE TABLE projects (
    project_id     text PRIMARY KEY CHECK (char_length(project_id) BETWEEN 1 AND 128),
    org_id         text NOT NULL CHECK (char_length(org_id) BETWEEN 1 AND 128),
    created_at     timestamptz NOT NULL DEFAULT now(),
    -- What the event ids derived from messages are keyed with (haki_message_id_key).
    message_id_key uuid NOT NULL DEFAULT gen_random_uuid(),
    UNIQUE (project_id, org_id)
);

CREATE TABLE api_keys (
    id         uuid NOT NULL DEFAULT gen_random_uuid(),
    -- sha256 of the whole key, hex. The clear key is shown once at creation, never stored.
    -- Unique across projects: authentication (haki_authenticate, haki_tenant) finds a key by
    -- its hash alone, through this index.
    key_hash   text NOT NULL UNIQUE CHECK (key_hash ~ '^[0-9a-f]{64}$'),
    -- First characters of the key, for display in listings ("hk_AbCd…").
    prefix     text NOT NULL,
    org_id     text NOT NULL CHECK (char_length(org_id) BETWEEN 1 AND 128),
    project_id text NOT NULL CHECK (char_length(project_id) BETWEEN 1 AND 128),
    label      text,
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz,
    PRIMARY KEY (project_id, id),
    CONSTRAINT api_keys_project_org_fk
        FOREIGN KEY (project_id, org_id) REFERENCES projects (project_id, org_id)
);

-- 3. Memory: durable facts and dated episodes (events), with their 384-d embeddings.
-- Times are held within what the API accepts (1970 … 9999, haki.models.Timestamp), so a
-- stored row always reads back as a Python datetime.
CREATE TABLE facts (
    id                 uuid NOT NULL DEFAULT gen_random_uuid(),
    project_id         text NOT NULL CHECK (char_length(project_id) BETWEEN 1 AND 128),
    subject_id         text NOT NULL CHECK (char_length(subject_id) BETWEEN 1 AND 128),
    predicate          text NOT NULL CHECK (predicate <> ''),
    value              jsonb NOT NULL,
    qualifiers         jsonb NOT NULL DEFAULT '{}'::jsonb,
    status             text NOT NULL DEFAULT 'active' CHECK (status IN
                           ('candidate', 'active', 'superseded', 'disputed', 'disabled',
                            'deleted')),
    confidence         real CHECK (confidence BETWEEN 0 AND 1),
    volatility         text NOT NULL DEFAULT 'stable' CHECK (volatility IN
                           ('stable', 'slow', 'volatile', 'ephemeral')),
    valid_from         timestamptz CONSTRAINT facts_valid_from_range
                           CHECK (valid_from BETWEEN '1970-01-01 00:00:00+00'
                                                 AND '9999-12-31 23:59:59.999999+00'),
    valid_to           timestamptz CONSTRAINT facts_valid_to_range
                           CHECK (valid_to BETWEEN '1970-01-01 00:00:00+00'
                                               AND '9999-12-31 23:59:59.999999+00'),
    recorded_from      timestamptz NOT NULL DEFAULT now() CONSTRAINT facts_recorded_from_range
                           CHECK (recorded_from BETWEEN '1970-01-01 00:00:00+00'
                                                    AND '9999-12-31 23:59:59.999999+00'),
    recorded_to        timestamptz CONSTRAINT facts_recorded_to_range
                           CHECK (recorded_to BETWEEN '1970-01-01 00:00:00+00'
                                                  AND '9999-12-31 23:59:59.999999+00'),
    last_reinforced_at timestamptz CONSTRAINT facts_last_reinforced_at_range
                           CHECK (last_reinforced_at BETWEEN '1970-01-01 00:00:00+00'
                                                         AND '9999-12-31 23:59:59.999999+00'),
    supersedes_id      uuid,
    source_event_ids   uuid[] NOT NULL DEFAULT '{}',
    version            integer NOT NULL DEFAULT 1 CHECK (version >= 1),
    embedding          vector(384) NOT NULL,
    -- Full-text arm: parsed once at write time, never per query. 'simple': no stemming, no
    -- stop words, language-neutral (memory is French and English). The predicate
    -- ("preferred_language", split on '_' by the parser) weighs A; the string and number
    -- leaves of the value weigh D.
    search_vector      tsvector GENERATED ALWAYS AS (
                           setweight(to_tsvector('simple'::regconfig, predicate), 'A')
                           || jsonb_to_tsvector('simple'::regconfig, value,
                                                '["string", "numeric"]'::jsonb)
                       ) STORED,
    PRIMARY KEY (project_id, id),
    CHECK (valid_to IS NULL OR valid_from IS NULL OR valid_to > valid_from),
    -- Erasing a fact is never blocked by the fact that superseded it: the link goes with the
    -- erased fact (the newer one stays, its supersedes_id becomes NULL; project_id stays).
    CONSTRAINT facts_supersedes_id_fkey FOREIGN KEY (project_id, supersedes_id)
        REFERENCES facts (project_id, id) ON DELETE SET NULL (supersedes_id)
);

-- Scope + hard filter: every retrieval filters on the exact (project, subject) and status;
-- a small scope is read through this index and sorted exactly.
CREATE INDEX facts_scope_idx ON facts (project_id, subject_id, status);

-- The planner's choice between the HNSW index and an exact in-scope scan rests on its estimate
-- of the scope's size. Subjects belong to projects, so the two columns are far from
-- independent: without these statistics the estimate multiplies two selectivities and is off
-- by orders of magnitude.
CREATE STATISTICS facts_scope_stats (dependencies, mcv) ON project_id, subject_id FROM facts;

-- Vector arm: ORDER BY embedding <=> q LIMIT k, cosine (the distance the ranking uses).
-- ef_construction 128 (not the default 64): on 1M rows it lets ef_search reach recall 0.97
-- at a third of the cost.
CREATE INDEX facts_embedding_hnsw ON facts
    USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 128);

-- Text arm: search_vector @@ term (haki_idf_search).
CREATE INDEX facts_search_vector_gin ON facts USING gin (search_vector);

-- The foreign key's ON DELETE action looks up the facts superseding each erased fact; without
-- this index every erased fact would cost a scan of the whole table.
CREATE INDEX facts_supersedes_idx ON facts (project_id, supersedes_id)
    WHERE supersedes_id IS NOT NULL;

CREATE TABLE events (
    -- Unique per project: two projects may hold the same client event id, and a write never
    -- learns whether another project holds it.
    id              uuid NOT NULL DEFAULT gen_random_uuid(),
    project_id      text NOT NULL CHECK (char_length(project_id) BETWEEN 1 AND 128),
    subject_id      text NOT NULL CHECK (char_length(subject_id) BETWEEN 1 AND 128),
    kind            text NOT NULL CHECK (kind <> ''),
    payload         jsonb NOT NULL DEFAULT '{}'::jsonb,
    occurred_at     timestamptz NOT NULL DEFAULT now() CONSTRAINT events_occurred_at_range
                        CHECK (occurred_at BETWEEN '1970-01-01 00:00:00+00'
                                               AND '9999-12-31 23:59:59.999999+00'),
    recorded_at     timestamptz NOT NULL DEFAULT now(),
    embedding       vector(384) NOT NULL,
    -- A client's idempotency key (POST /v1/events); a client `id` is the other way to make a
    -- delivery idempotent.
    idempotency_key text CHECK (char_length(idempotency_key) BETWEEN 1 AND 128),
    -- The conversation thread the event belongs to (optional, the rules of subject_id); a
    -- context call may narrow its episodes (and the turns around them) to one thread.
    thread_id       text CHECK (char_length(thread_id) BETWEEN 1 AND 128),
    -- The order events were said within one time: the messages of one batch often share one
    -- (the server's, when they give none); (occurred_at, seq) is the order everywhere. A batch
    -- is inserted in lock order, so POST /v1/events draws the batch's numbers first, in the
    -- order listed (the runtime role may use the sequence).
    seq             bigint GENERATED BY DEFAULT AS IDENTITY,
    -- Full-text column, from the payload's text when it has one (what the excerpt shows),
    -- else from its string and number leaves; the text is cut at 200,000 characters so that a
    -- pasted log never exceeds tsvector's 1 MB limit.
    search_vector   tsvector GENERATED ALWAYS AS (
                        CASE WHEN jsonb_typeof(payload -> 'text') = 'string'
                             THEN to_tsvector('simple'::regconfig,
                                              left(payload ->> 'text', 200000))
                             ELSE jsonb_to_tsvector('simple'::regconfig, payload,
                                                    '["string", "numeric"]'::jsonb)
                        END
                    ) STORED,
    PRIMARY KEY (project_id, id)
);

-- One scope's episodes in the order said: the turns around an episode (haki_neighbour_turns),
-- the exact nearest-episode scan of a small scope, GET /v1/events (its keyset), the stats.
CREATE INDEX events_scope_idx ON events (project_id, subject_id, occurred_at, seq);

CREATE INDEX events_embedding_hnsw ON events
    USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 128);

CREATE INDEX events_search_vector_gin ON events USING gin (search_vector);

-- POST /v1/events: `INSERT ... ON CONFLICT DO NOTHING` arbitrates on this index and on the
-- primary key, so two concurrent replays of one key write one row; haki/memory/events.py
-- looks the original up by it.
CREATE UNIQUE INDEX events_idempotency_key_idx ON events (project_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

-- Facts that contradict each other. No foreign key to facts: a set names its facts in an
-- array, and erasing a fact rewrites the sets that name it (haki/memory/forget.py).
CREATE TABLE conflict_sets (
    id          uuid NOT NULL DEFAULT gen_random_uuid(),
    project_id  text NOT NULL CHECK (char_length(project_id) BETWEEN 1 AND 128),
    subject_id  text NOT NULL CHECK (char_length(subject_id) BETWEEN 1 AND 128),
    fact_ids    uuid[] NOT NULL CHECK (cardinality(fact_ids) >= 2),
    status      text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'resolved')),
    reason      text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    resolved_at timestamptz,
    PRIMARY KEY (project_id, id),
    CHECK ((status = 'resolved') = (resolved_at IS NOT NULL))
);

-- The hard filter "never serve a fact of an open conflict set" reads one scope's open sets.
CREATE INDEX conflict_sets_open_idx ON conflict_sets (project_id, subject_id)
    WHERE status = 'open';

-- GET /v1/conflicts: one scope's sets in creation order, keyset-paginated on (created_at, id);
-- forget erases a subject's sets through it too.
CREATE INDEX conflict_sets_scope_idx ON conflict_sets (project_id, subject_id, created_at, id);

-- One row per subject that POST /v1/forget `disable` disabled (gone on `enable` or erasure):
-- every arm serves nothing of it.
CREATE TABLE disabled_subjects (
    project_id  text NOT NULL CHECK (char_length(project_id) BETWEEN 1 AND 128),
    subject_id  text NOT NULL CHECK (char_length(subject_id) BETWEEN 1 AND 128),
    disabled_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, subject_id)
);

-- One row per erasure (`mode: delete`), kept as its proof. It holds NO tenant content: not the
-- subject id, not a hash of it (a hash of a low-entropy id such as an e-mail address can be
-- reversed by guessing), not the fact id; only what was erased, how many rows per table, and
-- when. The tenant keeps the receipt id beside its own record of whom it concerned.
CREATE TABLE erasure_receipts (
    id                     uuid NOT NULL,
    project_id             text NOT NULL CHECK (char_length(project_id) BETWEEN 1 AND 128),
    target                 text NOT NULL CHECK (target IN ('subject', 'fact')),
    facts                  integer NOT NULL CHECK (facts >= 0),
    events                 integer NOT NULL CHECK (events >= 0),
    conflict_sets          integer NOT NULL CHECK (conflict_sets >= 0),
    conflict_sets_updated  integer NOT NULL CHECK (conflict_sets_updated >= 0),
    context_calls          integer NOT NULL CHECK (context_calls >= 0),
    context_calls_redacted integer NOT NULL CHECK (context_calls_redacted >= 0),
    context_traces         integer NOT NULL CHECK (context_traces >= 0),
    stats_rollups          integer NOT NULL CHECK (stats_rollups >= 0),
    call_feedback          integer NOT NULL DEFAULT 0 CHECK (call_feedback >= 0),
    created_at             timestamptz NOT NULL,
    PRIMARY KEY (project_id, id)
);

-- Per-project storage quotas (HAKI_MAX_FACTS_PER_PROJECT / HAKI_MAX_EVENTS_PER_PROJECT,
-- haki.memory.quota): how many facts and events each project holds, kept by the triggers of
-- haki_storage_count so that a write is checked against its quota without counting rows. A
-- project's count is the sum of a few slot rows: each writing statement adds its change to a
-- slot no other transaction holds, so writers never wait for each other's counter.
CREATE TABLE project_storage (
    project_id text    NOT NULL CHECK (char_length(project_id) BETWEEN 1 AND 128),
    slot       integer NOT NULL,
    facts      bigint  NOT NULL DEFAULT 0,
    events     bigint  NOT NULL DEFAULT 0,
    PRIMARY KEY (project_id, slot)
);

-- 4. Text statistics for the idf of the text arm, per scope, kept on write by the triggers of
-- haki_text_stats_apply — never computed by scanning a scope at query time. Rows whose counts
-- fall to zero are deleted, so forgetting a subject leaves none of its words behind. (Counts
-- are deltas summed on write, hence no CHECK >= 0: an upsert's proposed row may carry a
-- negative delta.) Tenant content: only the owner's functions read or write them.
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

-- The OR of tsqueries, built from the function behind the tsquery `||` operator, so no query
-- text is ever re-parsed or quoted.
CREATE AGGREGATE tsquery_or_agg(tsquery) (SFUNC = tsquery_or, STYPE = tsquery);

-- 5. Context calls and their traces, range-partitioned by UTC day on created_at: partitions
-- are made ahead and dropped whole past retention (haki_trace_partitions), and a DEFAULT
-- partition takes a row whose day has none, so no insert ever fails. Primary keys include the
-- partition key. Trace ids are UUIDv7, whose first 48 bits are the call's time in ms: inspect
-- bounds created_at to that time ± 1 hour and the planner prunes to one or two partitions.
CREATE TABLE context_calls (
    trace_id        uuid NOT NULL,
    project_id      text NOT NULL CHECK (char_length(project_id) BETWEEN 1 AND 128),
    subject_id      text NOT NULL CHECK (char_length(subject_id) BETWEEN 1 AND 128),
    query           text NOT NULL,
    purpose         text,
    budget_tokens   integer NOT NULL CHECK (budget_tokens > 0),
    packet          jsonb NOT NULL,
    token_count     integer NOT NULL CHECK (token_count >= 0),
    status          text NOT NULL CHECK (status IN ('ok', 'degraded')),
    -- Why a packet is empty: nothing in scope matched (no_memory), the recall floor gated
    -- every candidate (no_relevant_memory), or candidates were all blocked, expired or over
    -- budget (all_filtered; the warnings and the trace say which).
    empty_reason    text CHECK (empty_reason IN
                        ('no_memory', 'no_relevant_memory', 'all_filtered')),
    facts_served    integer NOT NULL CHECK (facts_served >= 0),
    episodes_served integer NOT NULL CHECK (episodes_served >= 0),
    candidates      integer NOT NULL CHECK (candidates >= 0),
    -- Milliseconds: embedding the query, retrieval SQL, the whole call up to the trace write.
    embed_ms        real NOT NULL,
    retrieval_ms    real NOT NULL,
    latency_ms      real NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, trace_id, created_at)
) PARTITION BY RANGE (created_at);

-- One scope's calls by time (GET /v1/calls, forget); the aggregation reads by time.
CREATE INDEX context_calls_scope_idx ON context_calls (project_id, subject_id, created_at);
CREATE INDEX context_calls_created_idx ON context_calls (created_at);

-- ONE row per call holding its decisions as parallel arrays (decision i is element i of
-- every array), action and reason as smallint codes (haki_trace_actions, haki_trace_reasons):
-- a row per decision would pay a tuple header, a line pointer and a key entry before its first
-- field. Array columns TOAST-compress once a row passes ~2 kB. No foreign key to
-- context_calls: one statement writes both rows (haki/assembler/trace.py), so neither exists
-- without the other, and a key would re-check the trace on the hot path.
CREATE TABLE context_traces (
    trace_id       uuid NOT NULL,
    created_at     timestamptz NOT NULL,
    project_id     text NOT NULL,
    ordinals       integer[] NOT NULL,
    fact_ids       uuid[] NOT NULL,
    event_ids      uuid[] NOT NULL,
    actions        smallint[] NOT NULL CHECK (actions <@ '{1,2,3}'::smallint[]),
    reasons        smallint[] NOT NULL CHECK (reasons <@ '{1,2,3,4,5,6,7}'::smallint[]),
    ranks          integer[] NOT NULL,
    scores         real[] NOT NULL,
    similarities   real[] NOT NULL,
    text_ranks     real[] NOT NULL,
    tokens         integer[] NOT NULL,
    unconfirmed    boolean[] NOT NULL,
    vector_ranks   integer[] NOT NULL,
    text_arm_ranks integer[] NOT NULL,
    expanded_from  uuid[] NOT NULL,
    PRIMARY KEY (project_id, trace_id, created_at)
) PARTITION BY RANGE (created_at);

CREATE TABLE context_calls_default PARTITION OF context_calls DEFAULT;
CREATE TABLE context_traces_default PARTITION OF context_traces DEFAULT;

-- Feedback on a call (POST /v1/calls/{trace_id}/feedback): which served items the answer used,
-- which memory of the call's subject should have been served, a verdict and a short note; one
-- row per (call, source), a repeat replaces it. It lives exactly as long as its call: the
-- table is partitioned by day on the call's created_at, and haki_trace_partitions makes and
-- drops its partitions with the calls'. No foreign key to context_calls (one would cost every
-- context call an index entry): the write checks the call in its tenant scope, and an erasure
-- (haki/memory/forget.py) removes the rows with the subject or the ids with the fact. The
-- note is tenant content: the stats role reads every column but it.
CREATE TABLE call_feedback (
    project_id      text NOT NULL CHECK (char_length(project_id) BETWEEN 1 AND 128),
    trace_id        uuid NOT NULL,
    call_created_at timestamptz NOT NULL,
    source          text NOT NULL CHECK (source IN ('agent', 'person')),
    subject_id      text NOT NULL CHECK (char_length(subject_id) BETWEEN 1 AND 128),
    -- Fact and event ids, as the client gave them (deduplicated, in order).
    used            uuid[] NOT NULL,
    missing         uuid[] NOT NULL,
    verdict         text CHECK (verdict IN ('helpful', 'unhelpful', 'wrong')),
    note            text CHECK (char_length(note) <= 1000),
    -- Last written (or redacted by an erasure): the aggregation re-folds the hours whose
    -- feedback changed after it last ran (haki/stats/aggregation.py).
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, trace_id, call_created_at, source)
) PARTITION BY RANGE (call_created_at);
-- A subject's feedback (erasure, the eval-set export) and a project's by call time (the
-- console's list of calls with a missing report).
CREATE INDEX call_feedback_scope_idx ON call_feedback (project_id, subject_id, call_created_at);
CREATE INDEX call_feedback_project_idx ON call_feedback (project_id, call_created_at);
-- What changed since the aggregation last ran, across projects.
CREATE INDEX call_feedback_updated_idx ON call_feedback (updated_at);
CREATE TABLE call_feedback_default PARTITION OF call_feedback DEFAULT;

-- 6. Stats: rollups written by the scheduled aggregation (haki/stats), one row per scope and
-- hour. latency_hist counts calls per latency bucket; the bounds are fixed in code
-- (haki.stats.LATENCY_BOUNDS_MS) so histograms of any rows merge by element-wise sum.
CREATE TABLE stats_rollups (
    project_id       text NOT NULL,
    subject_id       text NOT NULL,
    bucket_start     timestamptz NOT NULL,
    calls            integer NOT NULL CHECK (calls >= 0),
    calls_with_facts integer NOT NULL CHECK (calls_with_facts >= 0),
    tokens_served    bigint NOT NULL CHECK (tokens_served >= 0),
    latency_hist     integer[] NOT NULL,
    -- The feedback of the hour's calls (a call counts once, whatever its sources: its used
    -- and missing ids are the union of theirs).
    calls_with_feedback        integer NOT NULL DEFAULT 0 CHECK (calls_with_feedback >= 0),
    items_served_with_feedback integer NOT NULL DEFAULT 0
                                   CHECK (items_served_with_feedback >= 0),
    items_used                 integer NOT NULL DEFAULT 0 CHECK (items_used >= 0),
    tokens_with_feedback       bigint NOT NULL DEFAULT 0 CHECK (tokens_with_feedback >= 0),
    calls_with_missing         integer NOT NULL DEFAULT 0 CHECK (calls_with_missing >= 0),
    items_missing              integer NOT NULL DEFAULT 0 CHECK (items_missing >= 0),
    PRIMARY KEY (project_id, subject_id, bucket_start)
);

-- Single-row watermark: every call with created_at < rolled_until is in stats_rollups.
CREATE TABLE stats_watermark (
    singleton    boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    rolled_until   timestamptz NOT NULL,
    -- Feedback written (updated_at) before this instant is in the rollups.
    feedback_until timestamptz
);

-- 7. Row-level security, the second wall (the first: every query filters on the exact scope).
-- FORCE makes the policies apply to the table owner too; haki_admin members get an explicit
-- pass-through policy instead of relying on ownership. Each tenant table's tenant_isolation
-- policy (the runtime role sees the project of its key) is defined with haki_tenant, in
-- migrations/functions/haki_tenant.sql; until then the runtime role sees nothing.
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['projects', 'api_keys', 'facts', 'events', 'conflict_sets',
                             'disabled_subjects', 'erasure_receipts', 'text_scope_stats',
                             'text_term_stats', 'context_calls', 'context_traces',
                             'stats_rollups', 'project_storage', 'call_feedback']
    LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY admin_all ON %I TO haki_admin USING (true) WITH CHECK (true)', t);
    END LOOP;
END
$$;
-- The aggregation reads every project's calls and writes rollups.
CREATE POLICY stats_read ON context_calls FOR SELECT TO haki_stats USING (true);
CREATE POLICY stats_read ON call_feedback FOR SELECT TO haki_stats USING (true);
CREATE POLICY stats_write ON stats_rollups TO haki_stats USING (true) WITH CHECK (true);

-- 8. Privileges (docs/security.md, "Roles and privileges", lists them; a test compares the
-- list with the catalog). Partitions get no grant: the roles reach rows through the parents.
--   haki_app: reads and writes memory; never changes a stored event (the owner's `haki load`
--     does); DELETE everywhere forget `delete` erases; of a past call only the packet can be
--     rewritten (a fact's erasure redacts it), and of a trace the decisions' arrays (a fact's
--     erasure removes its decisions); the erasure receipt is written, never read back.
--   haki_stats: of context_calls only the columns its rollups aggregate, never a stored query
--     or a served packet; upserts rollups and the watermark.
GRANT SELECT, INSERT, UPDATE, DELETE ON facts, conflict_sets TO haki_app;
GRANT SELECT, INSERT, DELETE ON events, disabled_subjects TO haki_app;
GRANT USAGE ON SEQUENCE events_seq_seq TO haki_app;
GRANT SELECT, INSERT, DELETE ON context_calls, context_traces TO haki_app;
GRANT UPDATE (packet) ON context_calls TO haki_app;
GRANT UPDATE (ordinals, fact_ids, event_ids, actions, reasons, ranks, scores, similarities,
              text_ranks, tokens, unconfirmed, vector_ranks, text_arm_ranks, expanded_from)
    ON context_traces TO haki_app;
GRANT INSERT ON erasure_receipts TO haki_app;
GRANT SELECT, DELETE ON stats_rollups TO haki_app;
GRANT SELECT ON stats_watermark TO haki_app;
-- The runtime role reads its project's storage count; the triggers (SECURITY DEFINER) write it.
GRANT SELECT ON project_storage TO haki_app;

-- The runtime role writes and replaces feedback, and the erasure removes it or cuts an erased
-- fact's id out of it; the stats role reads what the rollups count, never the note.
GRANT SELECT, INSERT, DELETE ON call_feedback TO haki_app;
GRANT UPDATE (used, missing, verdict, note, updated_at) ON call_feedback TO haki_app;

GRANT SELECT (project_id, subject_id, created_at, latency_ms, facts_served, token_count,
              trace_id, episodes_served)
    ON context_calls TO haki_stats;
GRANT SELECT (project_id, subject_id, trace_id, call_created_at, source, used, missing, verdict,
              updated_at) ON call_feedback TO haki_stats;
GRANT SELECT, INSERT, UPDATE ON stats_rollups, stats_watermark TO haki_stats;
