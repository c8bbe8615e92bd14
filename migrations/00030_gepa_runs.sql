-- +goose Up
-- GEPA runs (spec 004): one row per run, projected from gepa_run.* events.
-- progress is the latest heartbeat or candidate; result is result.json.
CREATE TABLE rm_gepa_runs (
    id               uuid        PRIMARY KEY,
    owner_id         uuid        NOT NULL,
    model_id         uuid        NOT NULL,
    status           text        NOT NULL,
    task_model       text        NOT NULL,
    task_api_base    text,
    reflection_model text        NOT NULL,
    max_metric_calls int         NOT NULL,
    examples         int         NOT NULL,
    progress         jsonb,
    result           jsonb,
    error            text,
    worker_id        text,
    lease_seconds    int,
    last_beat        timestamptz,
    created_at       timestamptz NOT NULL,
    started_at       timestamptz,
    finished_at      timestamptz,
    seq              bigint      NOT NULL
);
CREATE INDEX rm_gepa_runs_owner ON rm_gepa_runs (owner_id, seq DESC);
CREATE INDEX rm_gepa_runs_unfinished ON rm_gepa_runs (status) WHERE status IN ('queued', 'running');

-- +goose Down
DROP TABLE rm_gepa_runs;
