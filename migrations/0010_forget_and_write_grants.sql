-- Forgetting (POST /v1/forget, SPEC §11) and the runtime role's privileges for the write API.
-- The statements are in haki/memory/forget.py.

-- Erasing a fact must not be blocked by a fact that superseded it: the link goes with the
-- erased fact (the newer fact stays, its supersedes_id becomes NULL).
ALTER TABLE facts
    DROP CONSTRAINT facts_supersedes_id_fkey,
    ADD CONSTRAINT facts_supersedes_id_fkey
        FOREIGN KEY (supersedes_id) REFERENCES facts (id) ON DELETE SET NULL;

-- The foreign key's ON DELETE action looks up the facts superseding each erased fact; without
-- this index every erased fact would cost a scan of the whole table.
CREATE INDEX facts_supersedes_idx ON facts (supersedes_id) WHERE supersedes_id IS NOT NULL;

-- One row per erasure (`mode: delete`), kept as its proof. It holds NO tenant content: not the
-- subject id, not a hash of it (a hash of a low-entropy id such as an e-mail address can be
-- reversed by guessing), not the fact id; only what was erased, how many rows per table, and
-- when. The tenant keeps the receipt id returned by the API beside its own record of whom it
-- concerned.
CREATE TABLE erasure_receipts (
    id                     uuid PRIMARY KEY,
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
    created_at             timestamptz NOT NULL
);

ALTER TABLE erasure_receipts ENABLE ROW LEVEL SECURITY;
ALTER TABLE erasure_receipts FORCE ROW LEVEL SECURITY;
CREATE POLICY admin_all ON erasure_receipts TO haki_admin USING (true) WITH CHECK (true);
CREATE POLICY tenant_isolation ON erasure_receipts TO haki_app
    USING (project_id = NULLIF(current_setting('haki.project_id', true), ''))
    WITH CHECK (project_id = NULLIF(current_setting('haki.project_id', true), ''));

-- Privileges of the runtime role, exactly what the write routes add to 0007's (the policies of
-- 0007 confine every one of them to the transaction's project):
--   DELETE on the memory and on calls, traces and rollups: forget `delete` erases a subject's
--     rows in each (a fact's erasure also drops the trace rows that name it);
--   UPDATE of context_calls.packet only: erasing a fact redacts it from the packets that served
--     it; no other column of a past call can be rewritten;
--   INSERT on erasure_receipts: the receipt is written, never read back nor changed.
GRANT DELETE ON facts, events, conflict_sets, context_calls, context_traces, stats_rollups
    TO haki_app;
GRANT UPDATE (packet) ON context_calls TO haki_app;
GRANT INSERT ON erasure_receipts TO haki_app;
