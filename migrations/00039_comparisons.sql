-- +goose Up
-- Reviewed comparisons (comparison.reviewed events): a person's verdict
-- between a trace's action and an AI-generated alternative for the same
-- prior context, with the presentation order and the finding it came from.
-- Dropped with their trace.
CREATE TABLE rm_comparisons (
    id             uuid        PRIMARY KEY,
    owner_id       uuid        NOT NULL,
    trace_id       uuid        NOT NULL,
    trace_revision integer     NOT NULL,
    step_id        text        NOT NULL,
    reviewer_id    uuid        NOT NULL,
    finding_id     text        NOT NULL,
    model_id       uuid        NOT NULL,
    comparison     jsonb       NOT NULL,
    created_at     timestamptz NOT NULL,
    seq            bigint      NOT NULL
);
CREATE INDEX rm_comparisons_trace ON rm_comparisons (trace_id);
CREATE UNIQUE INDEX rm_comparisons_reviewer_finding ON rm_comparisons (reviewer_id, finding_id);

-- +goose Down
DROP TABLE rm_comparisons;
