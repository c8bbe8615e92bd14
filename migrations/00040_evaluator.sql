-- +goose Up
-- The shared evaluator's frozen benchmark versions (evaluator.benchmark_frozen
-- events), as GET /evaluator shows them. The items themselves stay in the
-- log; this keeps their counts.
CREATE TABLE rm_evaluator_benchmarks (
    version      integer     PRIMARY KEY,
    as_of_seq    bigint      NOT NULL,
    items        integer     NOT NULL,
    slice_counts jsonb       NOT NULL,
    frozen_at    timestamptz NOT NULL
);

-- +goose Down
DROP TABLE rm_evaluator_benchmarks;
