package duck

import "strings"

// userTables lists the tables a user's SQL can see, in the order they are
// loaded. The DDL is the contract of POST /query (spec 001 "Querying"), so a
// column added here is a visible API change.
var userTables = []struct{ name, ddl string }{
	{"traces", `CREATE TABLE IF NOT EXISTS %s.traces(
		id VARCHAR, external_id VARCHAR, title VARCHAR, source_format VARCHAR, source_id VARCHAR,
		step_count INTEGER, metadata JSON, created_at TIMESTAMPTZ, updated_at TIMESTAMPTZ, contribute BOOLEAN)`},
	// steps: model and token usage are the LLM call's that produced the
	// step (metadata.model and metadata.usage, as the OTLP and per-call
	// formats record them), NULL where the source gave none.
	{"steps", `CREATE TABLE IF NOT EXISTS %s.steps(
		id VARCHAR, trace_id VARCHAR, step_index INTEGER, role VARCHAR, content VARCHAR,
		tool_name VARCHAR, tool_input JSON, tool_call_id VARCHAR, metadata JSON,
		model VARCHAR, input_tokens INTEGER, output_tokens INTEGER, total_tokens INTEGER, cached_tokens INTEGER)`},
	{"annotations", `CREATE TABLE IF NOT EXISTS %s.annotations(
		id VARCHAR, trace_id VARCHAR, step_id VARCHAR, step_index INTEGER, rating INTEGER,
		comment VARCHAR, quote JSON, label_error BOOLEAN, label_error_note VARCHAR,
		author_id VARCHAR, author_name VARCHAR, created_at TIMESTAMPTZ,
		criterion_id VARCHAR, value VARCHAR, member_id VARCHAR)`},
	// criteria: the account's review criteria (issue 33), archived ones
	// too, whose values are the annotations with a criterion_id (value is
	// the value's text: yes/no, a label name, or a scale's integer).
	{"criteria", `CREATE TABLE IF NOT EXISTS %s.criteria(
		criterion_id VARCHAR, name VARCHAR, description VARCHAR, kind VARCHAR, applies_to VARCHAR,
		scale_max INTEGER, labels JSON, archived BOOLEAN, created_at TIMESTAMPTZ)`},
	{"scores", `CREATE TABLE IF NOT EXISTS %s.scores(
		trace_id VARCHAR, reward_model_id VARCHAR, reward_model_name VARCHAR, score DOUBLE,
		created_at TIMESTAMPTZ)`},
	{"action_scores", `CREATE TABLE IF NOT EXISTS %s.action_scores(
		trace_id VARCHAR, step_id VARCHAR, step_index INTEGER, reward_model_id VARCHAR,
		reward_model_name VARCHAR, score DOUBLE, credit DOUBLE, created_at TIMESTAMPTZ)`},
	// step_labels: one row per labeled chunk (spec 001 "Step labels"), at
	// the chunk's first step, with the step's score breakdown (score, the
	// ordinal credit −2..2 and the expected credit −1..1, NULL when unscored).
	{"step_labels", `CREATE TABLE IF NOT EXISTS %s.step_labels(
		trace_id VARCHAR, step_id VARCHAR, step_index INTEGER, chunk_id VARCHAR, task_id VARCHAR, actor VARCHAR,
		intent VARCHAR, verdict VARCHAR, verdict_target VARCHAR, sentiment VARCHAR,
		type VARCHAR, effect VARCHAR, result VARCHAR, duplicate_of VARCHAR, is_output BOOLEAN,
		outcome VARCHAR, stance VARCHAR, coverage VARCHAR, evidence VARCHAR, note VARCHAR,
		score DOUBLE, credit INTEGER, expected_credit DOUBLE)`},
	// evaluator_scores: the shared evaluator's automatic score of each
	// action (assistant response or tool call) of a trace's current
	// revision, by the release that scored it last.
	{"evaluator_scores", `CREATE TABLE IF NOT EXISTS %s.evaluator_scores(
		trace_id VARCHAR, step_id VARCHAR, step_index INTEGER, release INTEGER, trace_revision INTEGER,
		score DOUBLE, credit DOUBLE, created_at TIMESTAMPTZ)`},
	// task_scores: one row per task of a labeled trace (spec 001 "Step
	// scores"), with the trace's score and outcome repeated on each row.
	{"task_scores", `CREATE TABLE IF NOT EXISTS %s.task_scores(
		trace_id VARCHAR, task_id VARCHAR, first_step_index INTEGER, last_step_index INTEGER,
		answer_step_index INTEGER, answer_points DOUBLE, work DOUBLE, score DOUBLE, capped BOOLEAN,
		trace_score DOUBLE, trace_outcome VARCHAR, policy VARCHAR, source VARCHAR)`},
	// members: the account's members (issue 36), removed ones too; an
	// annotation's member_id (= author_id) names one of them.
	{"members", `CREATE TABLE IF NOT EXISTS %s.members(
		member_id VARCHAR, name VARCHAR, role VARCHAR, created_at TIMESTAMPTZ, removed BOOLEAN)`},
}

// userViews are views over userTables that a user's SQL can see, created
// after the tables; deps are the tables each reads (a copying sandbox loads
// them when a query names the view). Part of the POST /query contract too.
var userViews = []struct {
	name string
	deps []string
	ddl  string
}{
	// trace_list: every trace with the scores the trace list shows (GET
	// /traces, by the same rules): action_credit, the mean credit of the
	// actions scored by the model that scored the trace's actions most
	// recently (credit_model_id), and how many (scored_actions); the
	// automatic annotation's trace_score and outcome; and the newest
	// whole-trace score (latest_score, latest_score_model_id).
	{"trace_list", []string{"traces", "action_scores", "task_scores", "scores"}, `CREATE VIEW main.trace_list AS
		WITH credit AS (
			SELECT trace_id, reward_model_id, avg(credit) AS action_credit, count(*)::INTEGER AS scored_actions, max(created_at) AS at
			FROM main.action_scores GROUP BY trace_id, reward_model_id
			QUALIFY row_number() OVER (PARTITION BY trace_id ORDER BY max(created_at) DESC, reward_model_id) = 1),
		annotation AS (
			SELECT trace_id, any_value(trace_score) AS trace_score, any_value(trace_outcome) AS outcome
			FROM main.task_scores GROUP BY trace_id),
		latest AS (
			SELECT trace_id, reward_model_id, score FROM main.scores
			QUALIFY row_number() OVER (PARTITION BY trace_id ORDER BY created_at DESC, reward_model_id) = 1)
		SELECT t.id, t.title, t.source_id, t.created_at,
			c.action_credit, COALESCE(c.scored_actions, 0) AS scored_actions, c.reward_model_id AS credit_model_id,
			a.trace_score, a.outcome, l.score AS latest_score, l.reward_model_id AS latest_score_model_id
		FROM main.traces t
		LEFT JOIN credit c ON c.trace_id = t.id
		LEFT JOIN annotation a ON a.trace_id = t.id
		LEFT JOIN latest l ON l.trace_id = t.id`},
}

// tracesContributeDDL adds `traces.contribute` (the trace's consent to train
// the shared evaluator) to an owner file written before the column existed;
// its values stay false until `critic replay snapshot` rebuilds the file,
// because that file never saw the consent events.
const tracesContributeDDL = `ALTER TABLE main.traces ADD COLUMN IF NOT EXISTS contribute BOOLEAN DEFAULT false`

// stepsUsageDDL adds the steps' model and token columns to an owner file
// written before they existed; its older rows keep NULL there until
// `critic replay snapshot` rebuilds the file.
const stepsUsageDDL = `ALTER TABLE main.steps ADD COLUMN IF NOT EXISTS model VARCHAR;
ALTER TABLE main.steps ADD COLUMN IF NOT EXISTS input_tokens INTEGER;
ALTER TABLE main.steps ADD COLUMN IF NOT EXISTS output_tokens INTEGER;
ALTER TABLE main.steps ADD COLUMN IF NOT EXISTS total_tokens INTEGER;
ALTER TABLE main.steps ADD COLUMN IF NOT EXISTS cached_tokens INTEGER`

// annotationsCriteriaDDL adds the annotations' criterion columns to an
// owner file written before criteria existed (it holds no values, so
// nothing is lost).
const annotationsCriteriaDDL = `ALTER TABLE main.annotations ADD COLUMN IF NOT EXISTS criterion_id VARCHAR;
ALTER TABLE main.annotations ADD COLUMN IF NOT EXISTS value VARCHAR`

// annotationsMemberDDL adds annotations.member_id to an owner file written
// before members existed: every annotation's member is its author (the
// account's implicit admin then), so it is filled from author_id. Such a
// file's members table stays empty until `critic replay snapshot`
// rebuilds it (it never saw user.created).
const annotationsMemberDDL = `ALTER TABLE main.annotations ADD COLUMN IF NOT EXISTS member_id VARCHAR;
UPDATE main.annotations SET member_id = author_id WHERE member_id IS NULL`

// appliedDDL is the projection's dedupe table: an event id is inserted in the
// same transaction as the rows it produced, so a redelivered event is a no-op.
// It lives in the owner file (a DuckDB transaction cannot write two files) and
// is never copied into a query sandbox.
const appliedDDL = `CREATE TABLE IF NOT EXISTS main._applied(event_id VARCHAR PRIMARY KEY);
CREATE TABLE IF NOT EXISTS main._trace_revisions(trace_id VARCHAR PRIMARY KEY, revision INTEGER);
CREATE TABLE IF NOT EXISTS main._step_labels(trace_id VARCHAR, chunk_id VARCHAR, label VARCHAR, PRIMARY KEY (trace_id, chunk_id));
CREATE TABLE IF NOT EXISTS main._step_quality_checks(trace_id VARCHAR, chunk_id VARCHAR, "check" VARCHAR, PRIMARY KEY (trace_id, chunk_id))`

// _step_labels (hidden) holds the labels a labeling model recorded, by
// chunk id, from which step_labels and task_scores are derived;
// _step_quality_checks (hidden) the grading model's quality checks, which
// the step scores blend.
//
// _trace_revisions (hidden like _applied) is each trace's current revision:
// a score computed on an older revision (the trace was re-imported while a
// model was scoring it) is stale and must not land in `scores`.

// quoteString renders s as a SQL string literal. Only trusted strings (our
// own file paths) go through it; user SQL never does.
func quoteString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
