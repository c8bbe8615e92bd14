-- +goose Up
-- The shared evaluator's releases (evaluator.released and
-- evaluator.rolled_back events), as GET /evaluator shows them: which
-- release is live and the benchmark figures it passed the gates with.
-- Candidates and their margins stay in the log (the CLI reads them there).
CREATE TABLE rm_evaluator_releases (
    release           integer     PRIMARY KEY,
    candidate_id      text        NOT NULL,
    benchmark_version integer     NOT NULL,
    replaces          integer     NOT NULL,
    overall           jsonb       NOT NULL,
    slices            jsonb       NOT NULL,
    policy            jsonb       NOT NULL,
    live              boolean     NOT NULL,
    released_at       timestamptz NOT NULL,
    rolled_back_at    timestamptz
);

-- +goose Down
DROP TABLE rm_evaluator_releases;
