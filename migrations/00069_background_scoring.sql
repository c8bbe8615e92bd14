-- +goose Up
-- Background scoring (spec 001 "Learned action credit"): a scoring run's
-- trace revision, whether background scoring requested it and its batch
-- (the scheduler counts a revision's automatic failures and a model's
-- active batches), and whether the owner paused a model's background
-- scoring. Runs recorded before this migration take their revision from
-- their request event, as a replay would.
ALTER TABLE rm_scoring_runs
    ADD COLUMN revision  integer,
    ADD COLUMN automatic boolean NOT NULL DEFAULT false,
    ADD COLUMN batch_id  uuid;
UPDATE rm_scoring_runs r SET revision = (e.payload->>'trace_revision')::int
FROM events e
WHERE e.type = 'scoring_run.requested.v1' AND e.stream = 'scoring/' || r.trace_id::text || '/' || r.model_id::text
  AND e.payload->>'run_id' = r.id::text;
ALTER TABLE rm_reward_models ADD COLUMN scoring_paused boolean NOT NULL DEFAULT false;
-- The scheduler's candidates: an owner's traces by last change, oldest
-- first (rm_traces_owner_updated); each candidate's runs of one model by
-- the existing rm_scoring_runs_trace.
CREATE INDEX rm_traces_owner_updated ON rm_traces (owner_id, updated_at, id);

-- +goose Down
DROP INDEX rm_traces_owner_updated;
ALTER TABLE rm_reward_models DROP COLUMN scoring_paused;
ALTER TABLE rm_scoring_runs
    DROP COLUMN batch_id,
    DROP COLUMN automatic,
    DROP COLUMN revision;
