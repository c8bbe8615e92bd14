-- +goose Up
-- Free workers pull the oldest claimable training attempt (queued, dataset
-- built); this keeps that lookup an index scan however many models exist.
CREATE INDEX rm_reward_models_claimable ON rm_reward_models (seq) WHERE status = 'queued' AND dataset_key IS NOT NULL;

-- +goose Down
DROP INDEX rm_reward_models_claimable;
