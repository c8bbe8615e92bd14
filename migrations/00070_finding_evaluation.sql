-- +goose Up
-- Whether a finding's pairs landed on the held-out side of the training
-- split (reward_model.dataset_built's evaluation_findings): the learning
-- report's included_in_evaluation.
ALTER TABLE rm_model_findings ADD COLUMN evaluation boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE rm_model_findings DROP COLUMN evaluation;
