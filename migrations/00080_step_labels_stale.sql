-- +goose Up
-- A rescore (trace.labeling_requested with relabel) asks for every chunk
-- anew: the labels recorded before it stay (they still score the trace)
-- but are stale until a new label of the chunk supersedes them, so the
-- trace's labeling shows queued while the labeler works.
ALTER TABLE rm_step_labels ADD COLUMN stale boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE rm_step_labels DROP COLUMN stale;
