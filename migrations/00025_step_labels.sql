-- +goose Up
-- Step labels a labeling model wrote (trace.steps_labeled events), by the
-- stable chunk id they describe. A grown or re-imported trace keeps the
-- labels of its unchanged chunks; labels of chunks that no longer exist
-- match nothing and are dropped with the trace.
CREATE TABLE rm_step_labels (
    trace_id       uuid        NOT NULL,
    chunk_id       text        NOT NULL,
    label          jsonb       NOT NULL,
    revision       integer     NOT NULL,
    model          text        NOT NULL,
    prompt_version text        NOT NULL,
    labeled_at     timestamptz NOT NULL,
    PRIMARY KEY (trace_id, chunk_id)
);

-- +goose Down
DROP TABLE rm_step_labels;
