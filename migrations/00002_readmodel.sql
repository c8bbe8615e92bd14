-- +goose Up
-- Read models: disposable, rebuilt from the log by `critic replay readmodel`.
-- Every timestamp comes from an event's recorded_at, never now(), so a rebuild
-- is identical to the live tables.
CREATE TABLE rm_users (
    id                    uuid        PRIMARY KEY,
    name                  text        NOT NULL UNIQUE,
    reward_models_enabled boolean     NOT NULL,
    created_at            timestamptz NOT NULL
);

CREATE TABLE rm_api_keys (
    key_hash   text        PRIMARY KEY,
    key_id     uuid        NOT NULL UNIQUE,
    user_id    uuid        NOT NULL,
    read_only  boolean     NOT NULL,
    revoked    boolean     NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL
);

CREATE TABLE rm_traces (
    id            uuid        PRIMARY KEY,
    owner_id      uuid        NOT NULL,
    external_id   text,
    title         text        NOT NULL,
    source_format text        NOT NULL,
    source_id     text        NOT NULL,
    metadata      jsonb       NOT NULL DEFAULT '{}',
    revision      integer     NOT NULL,
    step_count    integer     NOT NULL,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    -- seq of the import event: orders traces imported in one transaction
    -- (same created_at) as they appeared in the payload.
    import_seq    bigint      NOT NULL
);
CREATE INDEX rm_traces_owner_seq ON rm_traces (owner_id, import_seq DESC);

CREATE TABLE rm_steps (
    id           uuid    PRIMARY KEY,
    trace_id     uuid    NOT NULL,
    owner_id     uuid    NOT NULL,
    idx          integer NOT NULL,
    role         text    NOT NULL,
    content      text    NOT NULL,
    tool_name    text,
    tool_input   jsonb,
    tool_call_id text,
    metadata     jsonb
);
CREATE INDEX rm_steps_trace_idx ON rm_steps (trace_id, idx);

CREATE TABLE rm_spans (
    trace_id     uuid      NOT NULL,
    span_id      text      NOT NULL,
    parent_id    text,
    name         text      NOT NULL,
    kind         text,
    start_ns     bigint    NOT NULL,
    end_ns       bigint    NOT NULL,
    input        jsonb,
    output       jsonb,
    step_indices integer[] NOT NULL,
    ord          integer   NOT NULL,
    PRIMARY KEY (trace_id, span_id)
);

-- The events this projection has applied, recorded in the same transaction as
-- their effect, so a duplicate delivery changes nothing.
CREATE TABLE readmodel_applied (
    event_id uuid   PRIMARY KEY,
    seq      bigint NOT NULL
);

-- +goose Down
DROP TABLE readmodel_applied;
DROP TABLE rm_spans;
DROP TABLE rm_steps;
DROP TABLE rm_traces;
DROP TABLE rm_api_keys;
DROP TABLE rm_users;
