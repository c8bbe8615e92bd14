-- +goose Up
-- A trace's consent to train the shared evaluator (trace.contribution_set
-- events). Opted out unless someone opts it in; shown on trace summaries.
ALTER TABLE rm_traces ADD COLUMN contribute boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE rm_traces DROP COLUMN contribute;
