-- +goose Up
-- The trace list's automatic scores, kept on the trace row by the read-model
-- appliers so GET /traces can sort and filter by them with an index instead
-- of aggregating every trace's scores per request:
--   action_credit / scored_actions / credit_model_id: mean credit and count
--     of the trace's actions scored by the model that scored its actions
--     most recently (rm_action_scores);
--   trace_score / outcome: the automatic annotation (spec 001 "Step
--     scores"), derived from the steps and labels by domain/assessment;
--   latest_score / latest_score_model_id: the newest whole-trace score
--     (rm_trace_scores), which the list already showed as latest_score.
ALTER TABLE rm_traces
    ADD COLUMN action_credit         double precision,
    ADD COLUMN scored_actions        integer NOT NULL DEFAULT 0,
    ADD COLUMN credit_model_id       uuid,
    ADD COLUMN trace_score           double precision,
    ADD COLUMN outcome               text,
    ADD COLUMN latest_score          double precision,
    ADD COLUMN latest_score_model_id uuid;

-- Existing scores; trace_score and outcome need the Go rules, so traces
-- labeled before this migration get them from `critic replay readmodel`.
UPDATE rm_traces t SET latest_score = x.score, latest_score_model_id = x.model_id
FROM (SELECT DISTINCT ON (trace_id) trace_id, model_id, score FROM rm_trace_scores
      ORDER BY trace_id, created_at DESC, model_id) x
WHERE x.trace_id = t.id;

UPDATE rm_traces t SET credit_model_id = x.model_id, action_credit = x.credit, scored_actions = x.n
FROM (SELECT a.trace_id, a.model_id, avg(a.credit) AS credit, count(*) AS n
      FROM rm_action_scores a
      JOIN (SELECT DISTINCT ON (trace_id) trace_id, model_id FROM rm_action_scores
            ORDER BY trace_id, created_at DESC, model_id) m ON m.trace_id = a.trace_id AND m.model_id = a.model_id
      GROUP BY a.trace_id, a.model_id) x
WHERE x.trace_id = t.id;

-- One index per sort direction (nulls last in both), the newest import
-- first among equal values, as the list orders them.
CREATE INDEX rm_traces_owner_action_credit ON rm_traces (owner_id, action_credit ASC NULLS LAST, import_seq DESC);
CREATE INDEX rm_traces_owner_action_credit_desc ON rm_traces (owner_id, action_credit DESC NULLS LAST, import_seq DESC);
CREATE INDEX rm_traces_owner_scored_actions ON rm_traces (owner_id, scored_actions, import_seq DESC);
CREATE INDEX rm_traces_owner_scored_actions_desc ON rm_traces (owner_id, scored_actions DESC, import_seq DESC);
CREATE INDEX rm_traces_owner_trace_score ON rm_traces (owner_id, trace_score ASC NULLS LAST, import_seq DESC);
CREATE INDEX rm_traces_owner_trace_score_desc ON rm_traces (owner_id, trace_score DESC NULLS LAST, import_seq DESC);
CREATE INDEX rm_traces_owner_latest_score ON rm_traces (owner_id, latest_score ASC NULLS LAST, import_seq DESC);
CREATE INDEX rm_traces_owner_latest_score_desc ON rm_traces (owner_id, latest_score DESC NULLS LAST, import_seq DESC);
-- Outcomes sort by name, which is also worst first: failure,
-- insufficient_evidence, partial_success, success.
CREATE INDEX rm_traces_owner_outcome ON rm_traces (owner_id, outcome ASC NULLS LAST, import_seq DESC);
CREATE INDEX rm_traces_owner_outcome_desc ON rm_traces (owner_id, outcome DESC NULLS LAST, import_seq DESC);

-- +goose Down
DROP INDEX rm_traces_owner_outcome_desc;
DROP INDEX rm_traces_owner_outcome;
DROP INDEX rm_traces_owner_latest_score_desc;
DROP INDEX rm_traces_owner_latest_score;
DROP INDEX rm_traces_owner_trace_score_desc;
DROP INDEX rm_traces_owner_trace_score;
DROP INDEX rm_traces_owner_scored_actions_desc;
DROP INDEX rm_traces_owner_scored_actions;
DROP INDEX rm_traces_owner_action_credit_desc;
DROP INDEX rm_traces_owner_action_credit;
ALTER TABLE rm_traces
    DROP COLUMN latest_score_model_id,
    DROP COLUMN latest_score,
    DROP COLUMN outcome,
    DROP COLUMN trace_score,
    DROP COLUMN credit_model_id,
    DROP COLUMN scored_actions,
    DROP COLUMN action_credit;
