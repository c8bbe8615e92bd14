-- +goose Up
-- A model's background scoring (GET /reward-models/{id} counts, the
-- scheduler's active batches and a revision's automatic failures) reads
-- one model's scores and automatic runs: without these it scanned every
-- account's.
CREATE INDEX rm_trace_scores_model ON rm_trace_scores (model_id, owner_id);
CREATE INDEX rm_scoring_runs_automatic ON rm_scoring_runs (model_id, status, trace_id) WHERE automatic;

-- +goose Down
DROP INDEX rm_scoring_runs_automatic;
DROP INDEX rm_trace_scores_model;
