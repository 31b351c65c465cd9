-- Rollups written by the scheduled aggregation (haki/stats). One row per scope and hour.
-- latency_hist counts calls per latency bucket; bucket bounds are fixed in code
-- (haki.stats.LATENCY_BOUNDS_MS) so histograms of any rows merge by element-wise sum.
CREATE TABLE stats_rollups (
    project_id       text NOT NULL,
    subject_id       text NOT NULL,
    bucket_start     timestamptz NOT NULL,
    calls            integer NOT NULL CHECK (calls >= 0),
    calls_with_facts integer NOT NULL CHECK (calls_with_facts >= 0),
    tokens_served    bigint NOT NULL CHECK (tokens_served >= 0),
    latency_hist     integer[] NOT NULL,
    PRIMARY KEY (project_id, subject_id, bucket_start)
);

-- Single-row watermark: every call with created_at < rolled_until is in stats_rollups.
CREATE TABLE stats_watermark (
    singleton    boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    rolled_until timestamptz NOT NULL
);
