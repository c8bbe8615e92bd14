-- +goose Up
-- The shared evaluator's automatic scores (evaluator.trace_scored events):
-- the latest scoring of each trace's actions, with the release and trace
-- revision it scored, and the outcome of each trace's latest scoring job
-- (evaluator.trace_scoring_failed too), so GET /traces/{id} can say
-- scored, scoring (a new revision or release is being scored; the old
-- scores stay shown until then) or failed.
CREATE TABLE rm_evaluator_scores (
    trace_id       uuid             NOT NULL,
    owner_id       uuid             NOT NULL,
    step_id        uuid             NOT NULL,
    release        integer          NOT NULL,
    trace_revision integer          NOT NULL,
    score          double precision NOT NULL,
    credit         double precision NOT NULL,
    scored_at      timestamptz      NOT NULL,
    PRIMARY KEY (trace_id, step_id)
);

CREATE TABLE rm_evaluator_scoring (
    trace_id       uuid        PRIMARY KEY,
    owner_id       uuid        NOT NULL,
    release        integer     NOT NULL,
    trace_revision integer     NOT NULL,
    status         text        NOT NULL,
    error          text,
    at             timestamptz NOT NULL
);

-- +goose Down
DROP TABLE rm_evaluator_scoring;
DROP TABLE rm_evaluator_scores;
