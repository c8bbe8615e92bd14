-- +goose Up
-- Scrape-time gauges (critic_jobs{kind,status}) count the jobs waiting or
-- running on every Prometheus scrape; these partial indexes keep that an
-- index-only look at the few unfinished rows instead of a scan of every
-- model and scoring run ever made.
CREATE INDEX rm_reward_models_unfinished ON rm_reward_models (status) WHERE status IN ('queued', 'running');
CREATE INDEX rm_scoring_runs_unfinished ON rm_scoring_runs (status) WHERE status IN ('queued', 'running');

-- +goose Down
DROP INDEX rm_scoring_runs_unfinished;
DROP INDEX rm_reward_models_unfinished;
