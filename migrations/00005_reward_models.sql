-- +goose Up
CREATE TABLE rm_reward_models (
    id            uuid        PRIMARY KEY,
    owner_id      uuid        NOT NULL,
    name          text        NOT NULL,
    base_model    text        NOT NULL,
    compute       text        NOT NULL,
    epochs        integer     NOT NULL,
    max_pairs     integer     NOT NULL,
    trace_ids     uuid[]      NOT NULL,
    status        text        NOT NULL,
    attempt       integer     NOT NULL,
    num_pairs     integer,
    metrics       jsonb,
    error         text,
    progress      jsonb,
    dataset_key   text,
    artifact_key  text,
    worker_id     text,
    lease_seconds integer,
    last_beat     timestamptz,
    created_at    timestamptz NOT NULL,
    started_at    timestamptz,
    finished_at   timestamptz,
    seq           bigint      NOT NULL
);
CREATE INDEX rm_reward_models_owner ON rm_reward_models (owner_id, seq DESC);
CREATE INDEX rm_reward_models_running ON rm_reward_models (status) WHERE status = 'running';

CREATE TABLE rm_trace_scores (
    trace_id   uuid             NOT NULL,
    model_id   uuid             NOT NULL,
    owner_id   uuid             NOT NULL,
    model_name text             NOT NULL,
    revision   integer          NOT NULL,
    score      double precision NOT NULL,
    created_at timestamptz      NOT NULL,
    PRIMARY KEY (trace_id, model_id)
);

CREATE TABLE rm_action_scores (
    step_id    uuid             NOT NULL,
    model_id   uuid             NOT NULL,
    trace_id   uuid             NOT NULL,
    owner_id   uuid             NOT NULL,
    model_name text             NOT NULL,
    revision   integer          NOT NULL,
    score      double precision NOT NULL,
    credit     double precision NOT NULL,
    created_at timestamptz      NOT NULL,
    PRIMARY KEY (step_id, model_id)
);
CREATE INDEX rm_action_scores_trace ON rm_action_scores (trace_id);

CREATE TABLE rm_scoring_runs (
    id          uuid        PRIMARY KEY,
    trace_id    uuid        NOT NULL,
    model_id    uuid        NOT NULL,
    owner_id    uuid        NOT NULL,
    status      text        NOT NULL,
    error       text,
    created_at  timestamptz NOT NULL,
    started_at  timestamptz,
    finished_at timestamptz,
    seq         bigint      NOT NULL
);
CREATE INDEX rm_scoring_runs_trace ON rm_scoring_runs (trace_id, model_id, seq DESC);

-- +goose Down
DROP TABLE rm_scoring_runs;
DROP TABLE rm_action_scores;
DROP TABLE rm_trace_scores;
DROP TABLE rm_reward_models;
