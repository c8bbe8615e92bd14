-- +goose Up
-- The learning report of a reward model (spec 001 RewardModelDetail.feedback):
-- every finding of the current attempt, whether extraction was recorded, why
-- it could not run, and what the model calls cost.
ALTER TABLE rm_reward_models
    ADD COLUMN feedback_recorded    boolean NOT NULL DEFAULT false,
    ADD COLUMN feedback_unavailable text,
    ADD COLUMN llm_usage            jsonb;

CREATE TABLE rm_model_findings (
    model_id   uuid    NOT NULL,
    attempt    integer NOT NULL,
    finding_id text    NOT NULL,
    seq        bigint  NOT NULL,
    ord        integer NOT NULL,
    trace_id   uuid    NOT NULL,
    finding    jsonb   NOT NULL,
    included   boolean NOT NULL DEFAULT false,
    PRIMARY KEY (model_id, attempt, finding_id)
);

CREATE TABLE rm_model_llm_usage (
    model_id      uuid    NOT NULL,
    attempt       integer NOT NULL,
    seq           bigint  NOT NULL,
    model         text    NOT NULL,
    calls         integer NOT NULL,
    input_tokens  bigint  NOT NULL,
    output_tokens bigint  NOT NULL,
    cached_tokens bigint  NOT NULL,
    PRIMARY KEY (model_id, seq, model)
);

-- +goose Down
DROP TABLE rm_model_llm_usage;
DROP TABLE rm_model_findings;
ALTER TABLE rm_reward_models DROP COLUMN llm_usage, DROP COLUMN feedback_unavailable, DROP COLUMN feedback_recorded;
