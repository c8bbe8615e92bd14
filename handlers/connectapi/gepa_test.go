package connectapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/criticml/critic/commands"

	criticv1 "github.com/criticml/critic/schema/gen/critic/v1"
	"github.com/criticml/critic/schema/gen/critic/v1/criticv1connect"
)

// GepaService answers REST's errors: a model that has not succeeded is
// INVALID_ARGUMENT (REST 422), another owner's model and unknown runs are
// NOT_FOUND, and a bad budget is refused before anything is queued. (The
// succeeded path runs in e2e's TestGepaRunEndToEnd, which has a worker.)
func TestGepaService(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	rm := criticv1connect.NewRewardModelServiceClient(http.DefaultClient, e.url)
	c := criticv1connect.NewGepaServiceClient(http.DefaultClient, e.url)
	refund, _ := e.importTwo(t, e.alice)
	created, err := rm.CreateRewardModel(ctx, withKey(e.alice, &criticv1.CreateRewardModelRequest{Name: "m", TraceIds: []string{refund.Summary.Id}}))
	require.NoError(t, err)
	id := created.Msg.RewardModel.Id

	_, err = c.CreateGepaRun(ctx, withKey(e.alice, &criticv1.CreateGepaRunRequest{RewardModelId: id}))
	ce := requireCode(t, err, connect.CodeInvalidArgument)
	require.Contains(t, ce.Message(), "has not succeeded")
	_, err = c.CreateGepaRun(ctx, withKey(e.bob, &criticv1.CreateGepaRunRequest{RewardModelId: id}))
	requireCode(t, err, connect.CodeNotFound)
	_, err = c.CreateGepaRun(ctx, withKey(e.alice, &criticv1.CreateGepaRunRequest{RewardModelId: id, MaxMetricCalls: proto.Int32(0)}))
	requireCode(t, err, connect.CodeInvalidArgument)
	_, err = c.CreateGepaRun(ctx, withKey(e.alice, &criticv1.CreateGepaRunRequest{}))
	requireCode(t, err, connect.CodeInvalidArgument)

	_, err = c.GetGepaRun(ctx, withKey(e.alice, &criticv1.GetGepaRunRequest{GepaRunId: "00000000-0000-0000-0000-000000000001"}))
	requireCode(t, err, connect.CodeNotFound)
	_, err = c.GetGepaSkill(ctx, withKey(e.alice, &criticv1.GetGepaSkillRequest{GepaRunId: "nope"}))
	requireCode(t, err, connect.CodeNotFound)
	list, err := c.ListGepaRuns(ctx, withKey(e.alice, &criticv1.ListGepaRunsRequest{}))
	require.NoError(t, err)
	require.Empty(t, list.Msg.GepaRuns, "nothing was queued")
}

// succeededModel trains a model on alice's two imported traces (rated one
// up, one down, and two steps of the first) the way a worker reports it, so GEPA runs can be requested.
func (e *env) succeededModel(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	refund, shippingID := e.importTwo(t, e.alice)
	ann := criticv1connect.NewAnnotationServiceClient(http.DefaultClient, e.url)
	for id, rating := range map[string]int32{refund.Summary.Id: 1, shippingID: -1} {
		_, err := ann.AddAnnotation(ctx, withKey(e.alice, &criticv1.AddAnnotationRequest{TraceId: id, Rating: new(rating)}))
		require.NoError(t, err)
	}
	for i, rating := range map[int]int32{1: 1, 3: -1} {
		_, err := ann.AddAnnotation(ctx, withKey(e.alice, &criticv1.AddAnnotationRequest{TraceId: refund.Summary.Id,
			StepId: new(refund.Steps[i].Id), Rating: new(rating)}))
		require.NoError(t, err)
	}
	code, body := e.rest(t, http.MethodPost, "/reward-models", e.alice, map[string]any{"name": "m",
		"trace_ids": []string{refund.Summary.Id, shippingID}, "training_config": map[string]any{"annotation_source": "explicit"}})
	require.Equal(t, http.StatusOK, code, string(body))
	var m struct{ ID string }
	require.NoError(t, json.Unmarshal(body, &m))
	cmds := e.srv.Cmds
	_, err := cmds.BuildDataset.Handle(ctx, commands.BuildDataset{ModelID: m.ID})
	require.NoError(t, err)
	job, err := cmds.ClaimTraining.Handle(ctx, commands.ClaimTraining{WorkerID: "w1", ModelID: m.ID, Attempt: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.NoError(t, e.blobs.Put(ctx, job.ArtifactKey, []byte("checkpoint")))
	res, err := cmds.CompleteTraining.Handle(ctx, commands.CompleteTraining{WorkerID: "w1", ModelID: m.ID, Attempt: 1, Metrics: json.RawMessage(`{"eval_pairs":0}`)})
	require.NoError(t, err)
	require.NoError(t, e.srv.Waiter.Wait(ctx, res.LastEventID))
	return m.ID
}

// A tenant's task_api_key (issue 31: secrets never follow tenant input) is
// accepted by REST and Connect alike and then appears nowhere a user or an
// operator can read: not in either API's answers (create, get, list), not in
// any table /query can see, not in any Postgres table (the event log holds
// it sealed), not in the server's log.
func TestGepaTaskAPIKeyIsNeverShown(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	modelID := e.succeededModel(t)
	c := criticv1connect.NewGepaServiceClient(http.DefaultClient, e.url)
	const restKey, connectKey = "sk-canary-rest-5f0c1d", "sk-canary-connect-9a7e44"
	leaked := func(where, text string) {
		t.Helper()
		for _, k := range []string{restKey, connectKey} {
			require.NotContains(t, text, k, "%s carries the task_api_key", where)
		}
	}

	// A key needs its base, through Connect as through REST.
	_, err := c.CreateGepaRun(ctx, withKey(e.alice, &criticv1.CreateGepaRunRequest{RewardModelId: modelID, TaskApiKey: proto.String(connectKey)}))
	ce := requireCode(t, err, connect.CodeInvalidArgument)
	requireDetail(t, ce, "invalid_request", "task_api_key")
	leaked("the refusal", ce.Error())

	base := "https://models.tenant.example/v1"
	code, body := e.rest(t, http.MethodPost, "/gepa-runs", e.alice, map[string]any{"reward_model_id": modelID,
		"task_model": "openai/agent", "task_api_base": base, "task_api_key": restKey})
	require.Equal(t, http.StatusOK, code, string(body))
	leaked("POST /gepa-runs", string(body))
	var viaREST struct{ ID string }
	require.NoError(t, json.Unmarshal(body, &viaREST))

	created, err := c.CreateGepaRun(ctx, withKey(e.alice, &criticv1.CreateGepaRunRequest{RewardModelId: modelID,
		TaskModel: new("openai/agent"), TaskApiBase: new(base), TaskApiKey: proto.String(connectKey)}))
	require.NoError(t, err)
	run := created.Msg.GepaRun
	require.Equal(t, base, run.GetTaskApiBase())
	leaked("CreateGepaRun", protojson.Format(run))

	// Both runs hold their key sealed, for the worker that claims them.
	for id, key := range map[string]string{viaREST.ID: restKey, run.Id: connectKey} {
		claim, err := e.srv.Cmds.ClaimGepa.Handle(ctx, commands.ClaimGepa{WorkerID: "w1", RunID: id, Lease: time.Minute})
		require.NoError(t, err)
		require.Equal(t, key, claim.Job.TaskAPIKey, "the claiming worker gets the tenant's key")
	}

	for _, id := range []string{viaREST.ID, run.Id} {
		code, body := e.rest(t, http.MethodGet, "/gepa-runs/"+id, e.alice, nil)
		require.Equal(t, http.StatusOK, code, string(body))
		leaked("GET /gepa-runs/{id}", string(body))
		got, err := c.GetGepaRun(ctx, withKey(e.alice, &criticv1.GetGepaRunRequest{GepaRunId: id}))
		require.NoError(t, err)
		leaked("GetGepaRun", protojson.Format(got.Msg))
	}
	code, body = e.rest(t, http.MethodGet, "/gepa-runs", e.alice, nil)
	require.Equal(t, http.StatusOK, code, string(body))
	require.Contains(t, string(body), run.Id)
	leaked("GET /gepa-runs", string(body))
	list, err := c.ListGepaRuns(ctx, withKey(e.alice, &criticv1.ListGepaRunsRequest{}))
	require.NoError(t, err)
	require.Len(t, list.Msg.GepaRuns, 2)
	leaked("ListGepaRuns", protojson.Format(list.Msg))

	// Every table the tenant's SQL sees, whole (from a snapshot that has
	// applied the runs' events).
	q := func(sql string) [][]any {
		t.Helper()
		// 503 while the snapshot catches up with the runs.
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			code, body := e.rest(t, http.MethodPost, "/query", e.alice, map[string]any{"sql": sql})
			if code == http.StatusOK {
				var out struct{ Rows [][]any }
				require.NoError(t, json.Unmarshal(body, &out))
				return out.Rows
			}
			require.True(t, code == http.StatusServiceUnavailable && time.Now().Before(deadline), "%s: %d %s", sql, code, body)
		}
	}
	tables := q(`SELECT DISTINCT table_name FROM information_schema.tables ORDER BY 1`)
	require.NotEmpty(t, tables)
	names := make([]string, len(tables))
	for i, row := range tables {
		names[i] = row[0].(string)
		rows, err := json.Marshal(q(`SELECT * FROM "` + names[i] + `"`))
		require.NoError(t, err)
		leaked("/query over "+names[i], string(rows))
	}
	require.Contains(t, names, "traces")

	// Every Postgres table, the event log's payloads included.
	pgTables, err := e.pool.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`)
	require.NoError(t, err)
	var pgNames []string
	for pgTables.Next() {
		var n string
		require.NoError(t, pgTables.Scan(&n))
		pgNames = append(pgNames, n)
	}
	require.NoError(t, pgTables.Err())
	require.Contains(t, pgNames, "events")
	for _, n := range pgNames {
		var all *string
		require.NoError(t, e.pool.QueryRow(ctx, `SELECT string_agg(row_to_json(x)::text, E'\n') FROM "`+n+`" x`).Scan(&all))
		if all != nil {
			leaked("table "+n, *all)
		}
	}
	var sealed int
	require.NoError(t, e.pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE payload->>'task_api_key_sealed' LIKE 'v1:%'`).Scan(&sealed))
	require.Equal(t, 2, sealed, "both keys are in the log, sealed")

	require.NotEmpty(t, e.logs.String())
	leaked("the server log", e.logs.String())
}
