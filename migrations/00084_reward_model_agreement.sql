-- +goose Up
-- The learning report's agreement (issue 36): how far the members who
-- labeled a model's training traces agreed, as reward_model.dataset_built
-- records it (events.DatasetAgreement); NULL before a dataset is built and
-- for datasets built before it was recorded.
ALTER TABLE rm_reward_models ADD COLUMN agreement jsonb;

-- +goose Down
ALTER TABLE rm_reward_models DROP COLUMN agreement;
