-- +goose Up
-- The reward statistics a model's training_succeeded event carries
-- (reward_stats.json, action_reward_stats.json: mean, std, count), shown on
-- the model so clients can calibrate its trace scores — sigmoid((score −
-- mean) / std), spec 004 — without downloading the checkpoint; the review
-- queue ranks whole traces by that calibrated score. Models that succeeded
-- before this migration get them from their latest success event, as a
-- replay would.
ALTER TABLE rm_reward_models ADD COLUMN reward_stats jsonb, ADD COLUMN action_reward_stats jsonb;
UPDATE rm_reward_models m
SET reward_stats = NULLIF(s.rs, 'null'::jsonb), action_reward_stats = NULLIF(s.ars, 'null'::jsonb)
FROM (SELECT DISTINCT ON (stream) stream, payload->'reward_stats' AS rs, payload->'action_reward_stats' AS ars
      FROM events WHERE type = 'reward_model.training_succeeded.v1' ORDER BY stream, seq DESC) s
WHERE s.stream = 'reward_model/' || m.id::text AND m.status = 'succeeded';

-- +goose Down
ALTER TABLE rm_reward_models DROP COLUMN action_reward_stats, DROP COLUMN reward_stats;
