-- +goose Up
-- A model's training_config as requested (defaults applied), shown on the
-- model so its page can say what it learned from — a criterion
-- (training_config.criterion, issue 33) among others. Models requested
-- before this migration get it from their request event, as a replay
-- would; requests that carried none read as the defaults of the time.
ALTER TABLE rm_reward_models ADD COLUMN training_config jsonb;
UPDATE rm_reward_models m
SET training_config = COALESCE(NULLIF(e.payload->'training_config', 'null'::jsonb), '{"annotation_source":"feedback","input_version":1}'::jsonb)
FROM events e
WHERE e.type = 'reward_model.requested.v1' AND e.stream = 'reward_model/' || m.id::text;

-- +goose Down
ALTER TABLE rm_reward_models DROP COLUMN training_config;
