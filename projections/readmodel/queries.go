package readmodel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/members"
	"github.com/criticml/critic/platform/pg"
)

// Queries reads the read model for the API. Every query is scoped to an
// owner: another owner's id is simply not found.
type Queries struct {
	pool *pgxpool.Pool
	// labeler is the deployment's step-label model ("" when none): with
	// one, a trace still missing labels is "queued", not "unlabeled".
	labeler string
}

// NewQueries returns the query side over pool.
func NewQueries(pool *pgxpool.Pool) *Queries { return &Queries{pool: pool} }

// WithLabeler says the deployment labels traces with model (a LiteLLM
// model string), so GET /traces/{id} reports missing labels as queued
// for it rather than asking for CRITIC_STEP_LABEL_MODEL.
func (q *Queries) WithLabeler(model string) *Queries {
	q.labeler = model
	return q
}

// CallerByKeyHash resolves an API key (by its SHA-256) to its account.
//
// A revoked key is refused from the moment its api_key.revoked event is
// stored, on every instance: besides the read model's flag, the same query
// checks the key's own stream in the event log (one index probe on
// events(stream, version)), so neither a lagging or parked projection nor a
// rebuild can let a revoked key through. For the same reason nothing may
// cache the answer of this lookup.
func (q *Queries) CallerByKeyHash(ctx context.Context, hash string) (*Caller, error) {
	var c Caller
	var role string
	err := q.pool.QueryRow(ctx, `SELECT u.id, u.name, k.read_only, u.reward_models_enabled, k.key_id, m.member_id, m.name, m.role
		FROM rm_api_keys k JOIN rm_users u ON u.id = k.user_id
		JOIN rm_members m ON m.owner_id = k.user_id AND m.member_id = COALESCE(k.member_id, k.user_id) AND NOT m.removed
		WHERE k.key_hash = $1 AND NOT k.revoked
		  AND NOT EXISTS (SELECT 1 FROM events e WHERE e.stream = 'api_key/' || k.key_id::text AND e.type = $2)`, hash, events.APIKeyRevoked).
		Scan(&c.UserID, &c.Name, &c.ReadOnly, &c.RewardModelsEnabled, &c.KeyID, &c.MemberID, &c.MemberName, &role)
	c.Role = members.Role(role)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, &domain.UnauthorizedError{Message: "invalid API key"}
	}
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// UserIDByName resolves an account name.
func (q *Queries) UserIDByName(ctx context.Context, name string) (string, error) {
	var id string
	err := q.pool.QueryRow(ctx, `SELECT id FROM rm_users WHERE name = $1`, name).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", domain.NotFound("user", name)
	}
	return id, err
}

// summaryCols and summaryFrom select a TraceSummary; the annotation counts
// exclude label errors from positive/negative, so they count what trains.
// The scores are the trace row's own columns (list_scores.go keeps them).
const summaryCols = `t.id, t.external_id, t.title, t.source_format, t.source_id, ` + sourceNameExpr + `,
	t.owner_id, t.step_count, t.created_at,
	c.positive, c.negative, c.comments, c.label_errors, t.latest_score_model_id, ls.model_name, t.latest_score, t.contribute,
	t.action_credit, t.scored_actions, t.credit_model_id, t.trace_score, t.outcome`

const summaryFrom = ` FROM rm_traces t LEFT JOIN LATERAL (SELECT
		count(*) FILTER (WHERE a.rating = 1 AND NOT a.label_error) AS positive,
		count(*) FILTER (WHERE a.rating = -1 AND NOT a.label_error) AS negative,
		count(*) FILTER (WHERE a.comment IS NOT NULL) AS comments,
		count(*) FILTER (WHERE a.label_error) AS label_errors
	FROM rm_annotations a WHERE a.trace_id = t.id) c ON true
	LEFT JOIN rm_trace_sources src ON src.owner_id = t.owner_id AND src.source_id = t.source_id
	LEFT JOIN rm_trace_scores ls ON ls.trace_id = t.id AND ls.model_id = t.latest_score_model_id
	JOIN rm_users u ON u.id = t.owner_id`

func scanSummary(row pgx.Row, s *TraceSummary, extra ...any) error {
	var lsID, lsName *string
	var lsScore *float64
	dest := append([]any{&s.ID, &s.ExternalID, &s.Title, &s.SourceFormat, &s.SourceID, &s.SourceName, &s.SourceOwnerID, &s.StepCount, &s.CreatedAt,
		&s.PositiveCount, &s.NegativeCount, &s.CommentCount, &s.LabelErrorCount, &lsID, &lsName, &lsScore, &s.Contribute,
		&s.ActionCredit, &s.ScoredActions, &s.CreditModelID, &s.TraceScore, &s.Outcome}, extra...)
	if err := row.Scan(dest...); err != nil {
		return err
	}
	if lsID != nil && lsName != nil && lsScore != nil {
		s.LatestScore = &LatestScore{RewardModelID: *lsID, RewardModelName: *lsName, Score: *lsScore}
	}
	s.CreatedAt = s.CreatedAt.UTC()
	return nil
}

// sourceNameExpr is the displayed source name of t (alias, else the
// recorder's default name, else the id), shared by the columns and the sort.
const sourceNameExpr = `COALESCE(src.name, CASE t.source_id WHEN 'claude-code' THEN u.name || '''s Claude Code' WHEN 'codex' THEN u.name || '''s Codex' ELSE t.source_id END)`

// ListTraces returns one page of the owner's traces, newest first unless
// f.Sort says otherwise, and the total matching the filter. A text query
// matches titles, step content and tool calls (name and input: an agent's
// action is often all in its input) case-insensitively; it is a scan of the
// owner's steps (strpos, so no LIKE wildcards to escape), fine for the
// accounts a reviewer browses.
func (q *Queries) ListTraces(ctx context.Context, owner string, f ListFilter) ([]TraceSummary, int, error) {
	where := `t.owner_id = $1 AND ($2 = '' OR t.source_id = $2)
		AND ($3::timestamptz IS NULL OR t.created_at >= $3) AND ($4::timestamptz IS NULL OR t.created_at < $4)
		AND ($5 = '' OR strpos(lower(t.title), $5) > 0
			OR EXISTS (SELECT 1 FROM rm_steps s WHERE s.trace_id = t.id AND (strpos(lower(s.content), $5) > 0
				OR strpos(lower(s.tool_name), $5) > 0 OR strpos(lower(s.tool_input::text), $5) > 0)))
		AND (COALESCE(cardinality($6::text[]), 0) = 0 OR t.outcome = ANY($6))
		AND ($7::float8 IS NULL OR t.action_credit >= $7) AND ($8::float8 IS NULL OR t.action_credit <= $8)
		AND ($9::float8 IS NULL OR t.trace_score >= $9) AND ($10::float8 IS NULL OR t.trace_score <= $10)
		AND ($11::float8 IS NULL OR t.latest_score >= $11) AND ($12::float8 IS NULL OR t.latest_score <= $12)
		AND ($13 = '' OR EXISTS (SELECT 1 FROM rm_annotations a WHERE a.trace_id = t.id AND a.author_id::text = $13))`
	args := []any{owner, f.SourceID, f.From, f.To, strings.ToLower(f.Query), f.Outcomes,
		f.ActionCredit.Min, f.ActionCredit.Max, f.TraceScore.Min, f.TraceScore.Max, f.LatestScore.Min, f.LatestScore.Max, f.Member}
	var total int
	if err := q.pool.QueryRow(ctx, `SELECT count(*) FROM rm_traces t WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	order := `t.import_seq DESC`
	switch f.Sort {
	case SortImported:
	case SortSource:
		order = sourceNameExpr + ` ASC, t.import_seq DESC`
	case SortSourceDesc:
		order = sourceNameExpr + ` DESC, t.import_seq DESC`
	default:
		col, dir := strings.TrimPrefix(string(f.Sort), "-"), "ASC"
		if strings.HasPrefix(string(f.Sort), "-") {
			dir = "DESC"
		}
		if !slices.Contains(scoreSorts, col) {
			return nil, 0, fmt.Errorf("readmodel: unknown trace sort %q", f.Sort)
		}
		// Each has an index in this order (migration 00068).
		order = `t.` + col + ` ` + dir + ` NULLS LAST, t.import_seq DESC`
	}
	// The page's ids first, from the traces alone (the owner's import_seq
	// index walks straight to the offset), then the summaries of those rows
	// only: with the lateral joins in the paged query, every row before
	// OFFSET paid its annotation counts and latest score (the last of 400
	// pages took 150–230 ms).
	page := `SELECT t.id FROM rm_traces t
		LEFT JOIN rm_trace_sources src ON src.owner_id = t.owner_id AND src.source_id = t.source_id
		JOIN rm_users u ON u.id = t.owner_id
		WHERE ` + where + ` ORDER BY ` + order + ` LIMIT $14 OFFSET $15`
	out, err := pg.Append(ctx, q.pool, []TraceSummary{}, func(r pgx.CollectableRow) (s TraceSummary, err error) {
		err = scanSummary(r, &s)
		return s, err
	}, `SELECT `+summaryCols+summaryFrom+` WHERE t.id = ANY(ARRAY(`+page+`))
		ORDER BY `+order, append(args, f.Limit, f.Offset)...)
	return out, total, err
}

// GetTrace returns the owner's trace with its steps and spans.
func (q *Queries) GetTrace(ctx context.Context, owner, id string) (*TraceDetail, error) {
	if !validUUID(id) {
		return nil, domain.NotFound("trace", id)
	}
	d := &TraceDetail{Steps: []Step{}, Spans: []Span{}, Annotations: []Annotation{},
		Scores: []TraceScore{}, ActionScores: []ActionScore{}, ScoringRuns: []ScoringRun{}, Evaluator: WaitingForEvaluator()}
	var meta []byte
	err := scanSummary(q.pool.QueryRow(ctx, `SELECT `+summaryCols+`, t.metadata`+summaryFrom+` WHERE t.id = $1 AND t.owner_id = $2`, id, owner), &d.TraceSummary, &meta)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, domain.NotFound("trace", id)
	}
	if err != nil {
		return nil, err
	}
	d.Metadata = meta
	steps, err := stepsByTrace(ctx, q.pool, []string{id})
	if err != nil {
		return nil, err
	}
	d.Steps = append(d.Steps, steps[id]...)
	if d.Annotations, err = q.annotations(ctx, `a.trace_id = $1`, id); err != nil {
		return nil, err
	}
	if err := q.scoresOf(ctx, d); err != nil {
		return nil, err
	}
	spans, err := q.spansOf(ctx, []string{id})
	if err != nil {
		return nil, err
	}
	d.Spans = append(d.Spans, spans[id]...)
	if err := q.assess(ctx, d); err != nil {
		return nil, err
	}
	if err := q.evaluatorOf(ctx, d); err != nil {
		return nil, err
	}
	if err := q.modelsOf(ctx, owner, d); err != nil {
		return nil, err
	}
	return d, nil
}

// stepsByTrace returns the steps of the given traces, in order, by trace
// id, read through db (the pool, or an applier's transaction).
func stepsByTrace(ctx context.Context, db pg.Querier, ids []string) (map[string][]Step, error) {
	out := make(map[string][]Step, len(ids))
	var trace string
	var s Step
	var in, md []byte
	err := pg.Each(ctx, db, []any{&trace, &s.ID, &s.Index, &s.Role, &s.Content, &s.ToolName, &in, &s.ToolCallID, &md}, func() error {
		s.ToolInput, s.Metadata = rawOrNull(in), rawOrNull(md)
		out[trace] = append(out[trace], s)
		return nil
	}, `SELECT trace_id, id, idx, role, content, tool_name, tool_input, tool_call_id, metadata
		FROM rm_steps WHERE trace_id = ANY($1) ORDER BY trace_id, idx`, ids)
	return out, err
}

// spansOf returns the spans of the given traces, in recorded order, by
// trace id.
func (q *Queries) spansOf(ctx context.Context, ids []string) (map[string][]Span, error) {
	out := map[string][]Span{}
	var trace string
	var s Span
	var in, o []byte
	var idx []int32
	err := pg.Each(ctx, q.pool, []any{&trace, &s.ID, &s.ParentID, &s.Name, &s.Kind, &s.StartNs, &s.EndNs, &in, &o, &idx}, func() error {
		s.Input, s.Output = rawOrNull(in), rawOrNull(o)
		s.StepIndices = make([]int, len(idx))
		for i, v := range idx {
			s.StepIndices[i] = int(v)
		}
		out[trace] = append(out[trace], s)
		return nil
	}, `SELECT trace_id, span_id, parent_id, name, kind, start_ns, end_ns, input, output, step_indices
		FROM rm_spans WHERE trace_id = ANY($1) ORDER BY trace_id, ord`, ids)
	return out, err
}

// exportPage is how many traces ExportTraces loads at a time: a few queries
// per page instead of several per trace, bounded memory for any account.
const exportPage = 500

// ExportTraces writes every trace of the owner as Stash Trace Format JSONL,
// oldest first, in a shape that re-imports to identical traces.
func (q *Queries) ExportTraces(ctx context.Context, owner string, w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	after := int64(-1)
	for {
		var ids []string
		page, err := pg.Append(ctx, q.pool, nil, func(r pgx.CollectableRow) (*TraceDetail, error) {
			d := &TraceDetail{}
			var meta []byte
			err := r.Scan(&d.ID, &d.ExternalID, &d.Title, &meta, &after)
			d.Metadata = meta
			ids = append(ids, d.ID)
			return d, err
		}, `SELECT id, external_id, title, metadata, import_seq FROM rm_traces
			WHERE owner_id = $1 AND import_seq > $2 ORDER BY import_seq LIMIT $3`, owner, after, exportPage)
		if err != nil {
			return err
		}
		if len(page) == 0 {
			return nil
		}
		steps, err := stepsByTrace(ctx, q.pool, ids)
		if err != nil {
			return err
		}
		spans, err := q.spansOf(ctx, ids)
		if err != nil {
			return err
		}
		for _, d := range page {
			d.Steps, d.Spans = steps[d.ID], spans[d.ID]
			if err := enc.Encode(exportLine(d)); err != nil {
				return err
			}
		}
	}
}

type exportStep struct {
	Role       string          `json:"role"`
	Content    string          `json:"content"`
	ToolName   string          `json:"tool_name,omitempty"`
	ToolInput  json.RawMessage `json:"tool_input,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
}

type exportTrace struct {
	ID       string          `json:"id"`
	Title    string          `json:"title"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
	Steps    []exportStep    `json:"steps"`
	Spans    []Span          `json:"spans,omitempty"`
}

func exportLine(d *TraceDetail) exportTrace {
	t := exportTrace{ID: d.ID, Title: d.Title, Spans: d.Spans, Steps: make([]exportStep, len(d.Steps))}
	if d.ExternalID != nil {
		t.ID = *d.ExternalID
	}
	if string(d.Metadata) != "{}" && string(d.Metadata) != "null" {
		t.Metadata = d.Metadata
	}
	for i, s := range d.Steps {
		e := exportStep{Role: s.Role, Content: s.Content, ToolName: domain.OrEmpty(s.ToolName), ToolCallID: domain.OrEmpty(s.ToolCallID)}
		if string(s.ToolInput) != "null" {
			e.ToolInput = s.ToolInput
		}
		if string(s.Metadata) != "null" {
			e.Metadata = s.Metadata
		}
		t.Steps[i] = e
	}
	return t
}

func rawOrNull(b []byte) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return json.RawMessage(b)
}

func validUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// decodeNumbers decodes JSON keeping numbers as json.Number, so rendering a
// tool input for training shows it exactly as recorded.
func decodeNumbers(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}
