-- +goose Up
-- The last labeling failure of a trace's revision (trace.labeling_failed),
-- shown as labeling state "failed" on GET /traces/{id} while that revision
-- is current. A retry (trace.labeling_requested) or a deleted trace removes
-- it; a newer revision makes it stale (revision no longer matches).
CREATE TABLE rm_trace_labeling (
    trace_id   uuid        PRIMARY KEY,
    revision   integer     NOT NULL,
    model      text        NOT NULL,
    failed     integer     NOT NULL,
    error      text        NOT NULL,
    failed_at  timestamptz NOT NULL
);

-- +goose Down
DROP TABLE rm_trace_labeling;
