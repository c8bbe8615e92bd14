package readmodel

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/criticml/critic/domain/events"
)

// accountErasureAppliers drop every row an erased account still has (issue
// 37, `critic users erase`). Its traces were erased one by one before the
// tombstone, and its models', skills', criteria's and members' events no
// longer open once its account key is destroyed, so on replay there is
// little left to drop; live, the tombstone is what removes them, so live and
// replay end in the same state. Cached answers of its idempotent requests
// (which may quote what it sent) go too.
var accountErasureAppliers = map[string]applier{
	events.AccountErased: on(func(ctx context.Context, tx pgx.Tx, e events.Envelope, p events.AccountErasedV1) error {
		return execAll(ctx, tx, accountErasureSQL, p.AccountID)
	}),
}

// accountErasureSQL deletes an account's rows, children before parents.
var accountErasureSQL = []string{
	`DELETE FROM rm_spans WHERE trace_id IN (SELECT id FROM rm_traces WHERE owner_id = $1)`,
	`DELETE FROM rm_step_labels WHERE trace_id IN (SELECT id FROM rm_traces WHERE owner_id = $1)`,
	`DELETE FROM rm_step_quality_checks WHERE trace_id IN (SELECT id FROM rm_traces WHERE owner_id = $1)`,
	`DELETE FROM rm_trace_labeling WHERE trace_id IN (SELECT id FROM rm_traces WHERE owner_id = $1)`,
	`DELETE FROM rm_assessments WHERE trace_id IN (SELECT id FROM rm_traces WHERE owner_id = $1)`,
	`DELETE FROM rm_steps WHERE owner_id = $1`,
	`DELETE FROM rm_annotations WHERE owner_id = $1`,
	`DELETE FROM rm_trace_scores WHERE owner_id = $1`,
	`DELETE FROM rm_action_scores WHERE owner_id = $1`,
	`DELETE FROM rm_scoring_runs WHERE owner_id = $1`,
	`DELETE FROM rm_comparisons WHERE owner_id = $1`,
	`DELETE FROM rm_adjudications WHERE owner_id = $1`,
	`DELETE FROM rm_evaluator_scores WHERE owner_id = $1`,
	`DELETE FROM rm_evaluator_scoring WHERE owner_id = $1`,
	`DELETE FROM rm_model_findings WHERE model_id IN (SELECT id FROM rm_reward_models WHERE owner_id = $1)`,
	`DELETE FROM rm_model_llm_usage WHERE model_id IN (SELECT id FROM rm_reward_models WHERE owner_id = $1)`,
	`DELETE FROM rm_gepa_runs WHERE owner_id = $1`,
	`DELETE FROM rm_reward_models WHERE owner_id = $1`,
	`DELETE FROM rm_criteria WHERE owner_id = $1`,
	`DELETE FROM rm_guidelines WHERE owner_id = $1`,
	`DELETE FROM rm_members WHERE owner_id = $1`,
	`DELETE FROM rm_trace_sources WHERE owner_id = $1`,
	`DELETE FROM rm_traces WHERE owner_id = $1`,
	`DELETE FROM api_key_usage WHERE key_id IN (SELECT key_id FROM rm_api_keys WHERE user_id = $1)`,
	`DELETE FROM rm_api_keys WHERE user_id = $1`,
	`DELETE FROM rm_users WHERE id = $1`,
	`DELETE FROM idempotency_keys WHERE owner_id = $1`,
}
