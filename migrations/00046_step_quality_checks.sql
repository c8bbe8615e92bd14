-- +goose Up
-- Quality checks a grading model answered (trace.steps_quality_checked
-- events), by the stable chunk id of the step they are about: the
-- probability of each option of the step's question, which the step scores
-- blend (spec 001 "Step scores", quality checks). Like labels, checks of
-- unchanged chunks outlive revisions and are dropped with the trace.
CREATE TABLE rm_step_quality_checks (
    trace_id       uuid        NOT NULL,
    chunk_id       text        NOT NULL,
    question       text        NOT NULL,
    probabilities  jsonb       NOT NULL,
    revision       integer     NOT NULL,
    model          text        NOT NULL,
    prompt_version text        NOT NULL,
    checked_at     timestamptz NOT NULL,
    PRIMARY KEY (trace_id, chunk_id)
);

-- +goose Down
DROP TABLE rm_step_quality_checks;
