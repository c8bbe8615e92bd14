package connectapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/rewardmodels"
	criticv1 "github.com/criticml/critic/schema/gen/critic/v1"
	"github.com/criticml/critic/schema/gen/critic/v1/criticv1connect"
)

// importTwo imports twoTraces for key (source id "ci") and returns the
// refund trace's detail and the shipping trace's id.
func (e *env) importTwo(t *testing.T, key string) (*criticv1.TraceDetail, string) {
	t.Helper()
	ctx := context.Background()
	c := e.client()
	imp, err := c.ImportTraces(ctx, withKey(key, &criticv1.ImportTracesRequest{Format: "stash", Data: twoTraces, SourceId: new("ci")}))
	require.NoError(t, err)
	got, err := c.GetTrace(ctx, withKey(key, &criticv1.GetTraceRequest{TraceId: imp.Msg.TraceIds[0]}))
	require.NoError(t, err)
	return got.Msg.Trace, imp.Msg.TraceIds[1]
}

// rest calls the REST API and returns the status and body.
func (e *env) rest(t *testing.T, method, path, key string, body any) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, e.url+"/api/v1/rm"+path, r)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, b
}

// postJSON posts a raw Connect JSON body to procedure.
func (e *env) postJSON(t *testing.T, procedure, key, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.url+procedure, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(b)
}

func grpcConn(t *testing.T, e *env) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(e.srv.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func requireDetail(t *testing.T, ce *connect.Error, code, field string) {
	t.Helper()
	require.Len(t, ce.Details(), 1)
	v, err := ce.Details()[0].Value()
	require.NoError(t, err)
	info, ok := v.(*criticv1.ErrorDetail)
	require.True(t, ok, "detail is %T", v)
	require.Equal(t, code, info.Code)
	require.Equal(t, field, info.Field)
}

func TestAnnotationService(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	c := criticv1connect.NewAnnotationServiceClient(http.DefaultClient, e.url)
	traces := e.client()
	refund, shippingID := e.importTwo(t, e.alice)
	answer := refund.Steps[3] // "Refunded."

	// Add: a step rating with a comment and a quote; the answer is the stored
	// annotation, readable at once.
	added, err := c.AddAnnotation(ctx, withKey(e.alice, &criticv1.AddAnnotationRequest{
		TraceId: refund.Summary.Id, StepId: new(answer.Id), Rating: proto.Int32(1), Comment: new("good"),
		Quote: &criticv1.Quote{Text: "Refund", Suffix: "ed."}}))
	require.NoError(t, err)
	a := added.Msg.Annotation
	require.NotEmpty(t, a.Id)
	require.Equal(t, refund.Summary.Id, a.TraceId)
	require.Equal(t, answer.Id, a.GetStepId())
	require.EqualValues(t, 1, a.GetRating())
	require.Equal(t, "good", a.GetComment())
	require.True(t, proto.Equal(&criticv1.Quote{Text: "Refund", Suffix: "ed."}, a.Quote), "%v", a.Quote)
	require.False(t, a.LabelError)
	require.Nil(t, a.LabelErrorNote)
	require.Equal(t, e.aliceID, a.AuthorId)
	require.Equal(t, "alice", a.AuthorName)
	require.WithinDuration(t, time.Now(), a.CreatedAt.AsTime(), time.Minute)
	got, err := traces.GetTrace(ctx, withKey(e.alice, &criticv1.GetTraceRequest{TraceId: refund.Summary.Id}))
	require.NoError(t, err)
	require.Len(t, got.Msg.Trace.Annotations, 1)
	require.True(t, proto.Equal(a, got.Msg.Trace.Annotations[0]), "TraceService %v\nAnnotationService %v", got.Msg.Trace.Annotations[0], a)

	// Trace-level ratings on both traces: a preference pair for the export.
	whole, err := c.AddAnnotation(ctx, withKey(e.alice, &criticv1.AddAnnotationRequest{TraceId: refund.Summary.Id, Rating: proto.Int32(1)}))
	require.NoError(t, err)
	require.Nil(t, whole.Msg.Annotation.StepId)
	require.Nil(t, whole.Msg.Annotation.Quote)
	require.Nil(t, whole.Msg.Annotation.Comment)
	_, err = c.AddAnnotation(ctx, withKey(e.alice, &criticv1.AddAnnotationRequest{TraceId: shippingID, Rating: proto.Int32(-1), Comment: new("vague")}))
	require.NoError(t, err)

	// Edit is PATCH: clear_rating nulls the rating, a set comment changes,
	// the rest is kept.
	ed, err := c.EditAnnotation(ctx, withKey(e.alice, &criticv1.EditAnnotationRequest{AnnotationId: a.Id, ClearRating: true, Comment: new("better")}))
	require.NoError(t, err)
	require.Nil(t, ed.Msg.Annotation.Rating)
	require.Equal(t, "better", ed.Msg.Annotation.GetComment())
	require.True(t, proto.Equal(a.Quote, ed.Msg.Annotation.Quote))
	require.Equal(t, a.CreatedAt.AsTime(), ed.Msg.Annotation.CreatedAt.AsTime())
	ed, err = c.EditAnnotation(ctx, withKey(e.alice, &criticv1.EditAnnotationRequest{AnnotationId: a.Id, LabelError: new(true), LabelErrorNote: new("misread")}))
	require.NoError(t, err)
	require.Nil(t, ed.Msg.Annotation.Rating, "absent: kept")
	require.Equal(t, "better", ed.Msg.Annotation.GetComment(), "absent: kept")
	require.True(t, ed.Msg.Annotation.LabelError)
	require.Equal(t, "misread", ed.Msg.Annotation.GetLabelErrorNote())
	ed, err = c.EditAnnotation(ctx, withKey(e.alice, &criticv1.EditAnnotationRequest{AnnotationId: a.Id, ClearLabelErrorNote: true, LabelError: new(false), Rating: proto.Int32(-1)}))
	require.NoError(t, err)
	require.EqualValues(t, -1, ed.Msg.Annotation.GetRating())
	require.False(t, ed.Msg.Annotation.LabelError)
	require.Nil(t, ed.Msg.Annotation.LabelErrorNote)
	// The same PATCH through REST reads the same.
	code, body := e.rest(t, http.MethodPatch, "/annotations/"+a.Id, e.alice, map[string]any{"comment": "best"})
	require.Equal(t, http.StatusOK, code, string(body))
	got, err = traces.GetTrace(ctx, withKey(e.alice, &criticv1.GetTraceRequest{TraceId: refund.Summary.Id}))
	require.NoError(t, err)
	require.Equal(t, "best", got.Msg.Trace.Annotations[0].GetComment())
	require.EqualValues(t, -1, got.Msg.Trace.Annotations[0].GetRating())

	// Exports: annotations oldest first, in REST's export shape; pairs equal
	// REST's JSONL, read-only keys allowed.
	as, err := c.ExportAnnotations(ctx, withKey(e.aliceRO, &criticv1.ExportAnnotationsRequest{}))
	require.NoError(t, err)
	var exported []*criticv1.ExportedAnnotation
	for as.Receive() {
		exported = append(exported, as.Msg().Annotation)
	}
	require.NoError(t, as.Err())
	require.Len(t, exported, 3)
	x := exported[0]
	require.Equal(t, refund.Summary.Id, x.TraceId)
	require.Equal(t, "refund-1", x.GetTraceExternalId())
	require.EqualValues(t, 3, x.GetStepIndex())
	require.EqualValues(t, -1, x.GetRating())
	require.Equal(t, "best", x.GetComment())
	require.True(t, proto.Equal(a.Quote, x.Quote))
	require.False(t, x.LabelError)
	require.Equal(t, "alice", x.Author)
	require.Equal(t, a.CreatedAt.AsTime(), x.CreatedAt.AsTime())
	require.Nil(t, exported[1].StepIndex)
	require.Equal(t, "shipping-2", exported[2].GetTraceExternalId())

	ps, err := c.ExportPairs(ctx, withKey(e.aliceRO, &criticv1.ExportPairsRequest{}))
	require.NoError(t, err)
	var pairs []map[string]any
	for ps.Receive() {
		p := ps.Msg().Pair
		m := map[string]any{"chosen": p.Chosen, "rejected": p.Rejected, "trace_ids": toAny(p.TraceIds), "granularity": p.Granularity, "action_type": nil}
		if p.ActionType != nil {
			m["action_type"] = *p.ActionType
		}
		pairs = append(pairs, m)
	}
	require.NoError(t, ps.Err())
	require.NotEmpty(t, pairs)
	code, body = e.rest(t, http.MethodGet, "/export/pairs", e.alice, nil)
	require.Equal(t, http.StatusOK, code, string(body))
	var restPairs []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m))
		restPairs = append(restPairs, m)
	}
	require.Equal(t, restPairs, pairs)
	one, err := c.ExportPairs(ctx, withKey(e.alice, &criticv1.ExportPairsRequest{MaxPairs: proto.Int32(1)}))
	require.NoError(t, err)
	n := 0
	for one.Receive() {
		n++
	}
	require.NoError(t, one.Err())
	require.Equal(t, 1, n)

	// Rename a source: the new name is on the traces at once.
	rn, err := c.RenameTraceSource(ctx, withKey(e.alice, &criticv1.RenameTraceSourceRequest{SourceId: "ci", Name: "  CI bot "}))
	require.NoError(t, err)
	require.Equal(t, "ci", rn.Msg.SourceId)
	require.Equal(t, "  CI bot ", rn.Msg.Name, "REST echoes the name as sent")
	list, err := traces.ListTraces(ctx, withKey(e.alice, &criticv1.ListTracesRequest{}))
	require.NoError(t, err)
	for _, s := range list.Msg.Traces {
		require.Equal(t, "CI bot", s.SourceName)
	}

	t.Run("grpc client adds an annotation", func(t *testing.T) {
		conn := grpcConn(t, e)
		gctx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+e.alice)
		out := &criticv1.AddAnnotationResponse{}
		require.NoError(t, conn.Invoke(gctx, criticv1connect.AnnotationServiceAddAnnotationProcedure,
			&criticv1.AddAnnotationRequest{TraceId: shippingID, Comment: new("via gRPC")}, out))
		require.Equal(t, "via gRPC", out.Annotation.GetComment())
		require.Equal(t, shippingID, out.Annotation.TraceId)
		// A read-only key over gRPC: PERMISSION_DENIED.
		roctx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+e.aliceRO)
		err := conn.Invoke(roctx, criticv1connect.AnnotationServiceAddAnnotationProcedure,
			&criticv1.AddAnnotationRequest{TraceId: shippingID, Comment: new("no")}, out)
		require.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
	})

	t.Run("errors", func(t *testing.T) {
		// Read-only keys cannot write.
		_, err := c.AddAnnotation(ctx, withKey(e.aliceRO, &criticv1.AddAnnotationRequest{TraceId: refund.Summary.Id, Rating: proto.Int32(1)}))
		requireCode(t, err, connect.CodePermissionDenied)
		_, err = c.EditAnnotation(ctx, withKey(e.aliceRO, &criticv1.EditAnnotationRequest{AnnotationId: a.Id, Comment: new("x")}))
		requireCode(t, err, connect.CodePermissionDenied)
		_, err = c.RemoveAnnotation(ctx, withKey(e.aliceRO, &criticv1.RemoveAnnotationRequest{AnnotationId: a.Id}))
		requireCode(t, err, connect.CodePermissionDenied)
		_, err = c.RenameTraceSource(ctx, withKey(e.aliceRO, &criticv1.RenameTraceSourceRequest{SourceId: "ci", Name: "x"}))
		requireCode(t, err, connect.CodePermissionDenied)

		// Another owner's trace and annotations do not exist for bob.
		_, err = c.AddAnnotation(ctx, withKey(e.bob, &criticv1.AddAnnotationRequest{TraceId: refund.Summary.Id, Rating: proto.Int32(1)}))
		requireCode(t, err, connect.CodeNotFound)
		_, err = c.EditAnnotation(ctx, withKey(e.bob, &criticv1.EditAnnotationRequest{AnnotationId: a.Id, Comment: new("x")}))
		requireCode(t, err, connect.CodeNotFound)
		_, err = c.RemoveAnnotation(ctx, withKey(e.bob, &criticv1.RemoveAnnotationRequest{AnnotationId: a.Id}))
		requireCode(t, err, connect.CodeNotFound)
		bobs, err := c.ExportAnnotations(ctx, withKey(e.bob, &criticv1.ExportAnnotationsRequest{}))
		require.NoError(t, err)
		require.False(t, bobs.Receive())
		require.NoError(t, bobs.Err())
		// Reward models disabled: not found, streams included.
		_, err = c.AddAnnotation(ctx, withKey(e.disabled, &criticv1.AddAnnotationRequest{TraceId: refund.Summary.Id, Rating: proto.Int32(1)}))
		requireCode(t, err, connect.CodeNotFound)
		dis, err := c.ExportPairs(ctx, withKey(e.disabled, &criticv1.ExportPairsRequest{}))
		require.NoError(t, err)
		require.False(t, dis.Receive())
		requireCode(t, dis.Err(), connect.CodeNotFound)

		// Validation: REST's messages, with the code and field as a detail.
		_, err = c.AddAnnotation(ctx, withKey(e.alice, &criticv1.AddAnnotationRequest{TraceId: refund.Summary.Id, StepId: new(answer.Id), Rating: proto.Int32(2)}))
		ce := requireCode(t, err, connect.CodeInvalidArgument)
		require.Contains(t, ce.Message(), "rating must be 1, -1 or null")
		requireDetail(t, ce, "invalid_annotation", "rating")
		_, err = c.AddAnnotation(ctx, withKey(e.alice, &criticv1.AddAnnotationRequest{TraceId: refund.Summary.Id, Quote: &criticv1.Quote{Text: "Refund"}, Comment: new("x")}))
		ce = requireCode(t, err, connect.CodeInvalidArgument)
		require.Contains(t, ce.Message(), "a quote needs a step_id")
		_, err = c.EditAnnotation(ctx, withKey(e.alice, &criticv1.EditAnnotationRequest{AnnotationId: a.Id, Rating: proto.Int32(1), ClearRating: true}))
		ce = requireCode(t, err, connect.CodeInvalidArgument)
		require.Contains(t, ce.Message(), "rating and clear_rating are both set")
		requireDetail(t, ce, "invalid_request", "rating")
		_, err = c.EditAnnotation(ctx, withKey(e.alice, &criticv1.EditAnnotationRequest{AnnotationId: a.Id, ClearRating: true, ClearComment: true}))
		ce = requireCode(t, err, connect.CodeInvalidArgument)
		require.Contains(t, ce.Message(), "an annotation needs a rating or a comment")
		bad, err := c.ExportPairs(ctx, withKey(e.alice, &criticv1.ExportPairsRequest{MaxPairs: proto.Int32(0)}))
		require.NoError(t, err)
		require.False(t, bad.Receive())
		ce = requireCode(t, bad.Err(), connect.CodeInvalidArgument)
		require.Contains(t, ce.Message(), "max_pairs must be a positive integer")
		_, err = c.RenameTraceSource(ctx, withKey(e.alice, &criticv1.RenameTraceSourceRequest{SourceId: "ci"}))
		ce = requireCode(t, err, connect.CodeInvalidArgument)
		require.Contains(t, ce.Message(), "source_id and name are required")
		_, err = c.RenameTraceSource(ctx, withKey(e.alice, &criticv1.RenameTraceSourceRequest{SourceId: "ci", Name: "   "}))
		ce = requireCode(t, err, connect.CodeInvalidArgument)
		require.Contains(t, ce.Message(), "name must be 1–120 characters")
	})

	// Remove answers once the annotation is gone; removing it again is not found.
	_, err = c.RemoveAnnotation(ctx, withKey(e.alice, &criticv1.RemoveAnnotationRequest{AnnotationId: a.Id}))
	require.NoError(t, err)
	got, err = traces.GetTrace(ctx, withKey(e.alice, &criticv1.GetTraceRequest{TraceId: refund.Summary.Id}))
	require.NoError(t, err)
	require.Len(t, got.Msg.Trace.Annotations, 1)
	require.Equal(t, whole.Msg.Annotation.Id, got.Msg.Trace.Annotations[0].Id)
	_, err = c.RemoveAnnotation(ctx, withKey(e.alice, &criticv1.RemoveAnnotationRequest{AnnotationId: a.Id}))
	requireCode(t, err, connect.CodeNotFound)
}

func TestRewardModelService(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	c := criticv1connect.NewRewardModelServiceClient(http.DefaultClient, e.url)
	refund, shippingID := e.importTwo(t, e.alice)

	// No worker runs here: a model stays queued.
	created, err := c.CreateRewardModel(ctx, withKey(e.alice, &criticv1.CreateRewardModelRequest{
		Name: " support ", TraceIds: []string{refund.Summary.Id, shippingID, refund.Summary.Id}, Epochs: proto.Int32(2)}))
	require.NoError(t, err)
	m := created.Msg.RewardModel
	require.NotEmpty(t, m.Id)
	require.Equal(t, "support", m.Name)
	require.Equal(t, rewardmodels.DefaultBaseModel, m.BaseModel)
	require.Equal(t, rewardmodels.Compute, m.Compute)
	require.EqualValues(t, 2, m.Epochs)
	require.EqualValues(t, domain.DefaultMaxPairs, m.MaxPairs)
	require.EqualValues(t, 2, m.TraceCount)
	require.Equal(t, "queued", m.Status)
	require.Nil(t, m.NumPairs)
	require.Nil(t, m.Metrics)
	require.Nil(t, m.Error)
	require.Nil(t, m.Progress)
	require.Nil(t, m.StartedAt)
	require.Nil(t, m.FinishedAt)
	require.WithinDuration(t, time.Now(), m.CreatedAt.AsTime(), time.Minute)

	list, err := c.ListRewardModels(ctx, withKey(e.aliceRO, &criticv1.ListRewardModelsRequest{}))
	require.NoError(t, err)
	require.Len(t, list.Msg.RewardModels, 1)
	require.True(t, proto.Equal(m, list.Msg.RewardModels[0]), "list %v\ncreate %v", list.Msg.RewardModels[0], m)
	got, err := c.GetRewardModel(ctx, withKey(e.aliceRO, &criticv1.GetRewardModelRequest{RewardModelId: m.Id}))
	require.NoError(t, err)
	require.True(t, proto.Equal(m, got.Msg.RewardModel))
	require.Equal(t, []string{refund.Summary.Id, shippingID}, got.Msg.TraceIds)

	// The Connect JSON of a model reads like REST's body.
	code, body := e.postJSON(t, criticv1connect.RewardModelServiceGetRewardModelProcedure, e.alice, `{"reward_model_id":"`+m.Id+`"}`)
	require.Equal(t, http.StatusOK, code, body)
	rcode, rbody := e.rest(t, http.MethodGet, "/reward-models/"+m.Id, e.alice, nil)
	require.Equal(t, http.StatusOK, rcode)
	var viaConnect struct {
		RewardModel map[string]any `json:"reward_model"`
		TraceIDs    []any          `json:"trace_ids"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &viaConnect))
	var viaREST map[string]any
	require.NoError(t, json.Unmarshal(rbody, &viaREST))
	require.Equal(t, viaREST["trace_ids"], viaConnect.TraceIDs)
	for _, k := range []string{"id", "name", "base_model", "compute", "status", "num_pairs", "metrics", "error", "progress", "started_at", "finished_at", "reward_stats"} {
		require.Equal(t, viaREST[k], viaConnect.RewardModel[k], k)
	}

	// Retry is only for failed models: REST's 409, mapped as every 409.
	_, err = c.RetryRewardModel(ctx, withKey(e.alice, &criticv1.RetryRewardModelRequest{RewardModelId: m.Id}))
	ce := requireCode(t, err, connect.CodeAborted)
	require.Contains(t, ce.Message(), "only a failed model can be retried; this one is queued")
	rcode, _ = e.rest(t, http.MethodPost, "/reward-models/"+m.Id+"/retry", e.alice, nil)
	require.Equal(t, http.StatusConflict, rcode)

	// Background scoring: shown on the model; pausing needs a succeeded
	// model (REST's 409 model_not_ready), the owner and a full-access key.
	require.True(t, proto.Equal(&criticv1.BackgroundScoring{}, got.Msg.BackgroundScoring), "%v", got.Msg.BackgroundScoring)
	_, err = c.SetBackgroundScoring(ctx, withKey(e.alice, &criticv1.SetBackgroundScoringRequest{RewardModelId: m.Id, Paused: true}))
	ce = requireCode(t, err, connect.CodeAborted)
	require.Contains(t, ce.Message(), "background scoring starts once it has succeeded")
	rcode, _ = e.rest(t, http.MethodPut, "/reward-models/"+m.Id+"/background-scoring", e.alice, map[string]any{"paused": true})
	require.Equal(t, http.StatusConflict, rcode)
	_, err = c.SetBackgroundScoring(ctx, withKey(e.bob, &criticv1.SetBackgroundScoringRequest{RewardModelId: m.Id, Paused: true}))
	requireCode(t, err, connect.CodeNotFound)
	_, err = c.SetBackgroundScoring(ctx, withKey(e.aliceRO, &criticv1.SetBackgroundScoringRequest{RewardModelId: m.Id, Paused: true}))
	requireCode(t, err, connect.CodePermissionDenied)

	// The review queue: a queued model has nothing to rank by (REST's 409);
	// without a model, the traces nobody annotated, as REST lists them.
	_, err = c.ReviewQueue(ctx, withKey(e.aliceRO, &criticv1.ReviewQueueRequest{RewardModelId: m.Id}))
	ce = requireCode(t, err, connect.CodeAborted)
	require.Contains(t, ce.Message(), "only a succeeded model has scores to rank by")
	rq, err := c.ReviewQueue(ctx, withKey(e.aliceRO, &criticv1.ReviewQueueRequest{Limit: 5}))
	require.NoError(t, err)
	require.Equal(t, "unannotated_first", rq.Msg.Ranking)
	rcode, rbody = e.rest(t, http.MethodGet, "/review-queue?limit=5", e.alice, nil)
	require.Equal(t, http.StatusOK, rcode, string(rbody))
	var restQueue struct {
		Items []struct {
			Kind            string `json:"kind"`
			TraceID         string `json:"trace_id"`
			AnnotationCount int32  `json:"annotation_count"`
		} `json:"items"`
	}
	require.NoError(t, json.Unmarshal(rbody, &restQueue))
	require.Len(t, rq.Msg.Items, 2)
	require.Len(t, restQueue.Items, 2)
	for i, it := range rq.Msg.Items {
		require.Equal(t, restQueue.Items[i].TraceID, it.TraceId)
		require.Equal(t, "trace", it.Kind)
		require.Equal(t, restQueue.Items[i].AnnotationCount, it.GetAnnotationCount())
		require.Nil(t, it.StepId)
	}
	_, err = c.ReviewQueue(ctx, withKey(e.alice, &criticv1.ReviewQueueRequest{Limit: 5000}))
	requireCode(t, err, connect.CodeInvalidArgument)

	// No weights before the model succeeded.
	_, err = c.GetWeights(ctx, withKey(e.alice, &criticv1.GetWeightsRequest{RewardModelId: m.Id}))
	requireCode(t, err, connect.CodeNotFound)

	// Scoring needs a succeeded model.
	_, err = c.ScoreTrace(ctx, withKey(e.alice, &criticv1.ScoreTraceRequest{TraceId: refund.Summary.Id, RewardModelId: m.Id}))
	ce = requireCode(t, err, connect.CodeInvalidArgument)
	require.Contains(t, ce.Message(), "the reward model has not succeeded (status queued)")
	requireDetail(t, ce, "model_not_ready", "reward_model_id")

	t.Run("grpc client lists the same models", func(t *testing.T) {
		conn := grpcConn(t, e)
		gctx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+e.alice)
		out := &criticv1.ListRewardModelsResponse{}
		require.NoError(t, conn.Invoke(gctx, criticv1connect.RewardModelServiceListRewardModelsProcedure, &criticv1.ListRewardModelsRequest{}, out))
		require.True(t, proto.Equal(list.Msg, out), "gRPC %v\nConnect %v", out, list.Msg)
	})

	t.Run("errors", func(t *testing.T) {
		_, err := c.CreateRewardModel(ctx, withKey(e.aliceRO, &criticv1.CreateRewardModelRequest{Name: "x", TraceIds: []string{refund.Summary.Id}}))
		requireCode(t, err, connect.CodePermissionDenied)
		_, err = c.RetryRewardModel(ctx, withKey(e.aliceRO, &criticv1.RetryRewardModelRequest{RewardModelId: m.Id}))
		requireCode(t, err, connect.CodePermissionDenied)
		_, err = c.ScoreTrace(ctx, withKey(e.aliceRO, &criticv1.ScoreTraceRequest{TraceId: refund.Summary.Id, RewardModelId: m.Id}))
		requireCode(t, err, connect.CodePermissionDenied)

		// Another owner's models and traces do not exist for bob.
		_, err = c.GetRewardModel(ctx, withKey(e.bob, &criticv1.GetRewardModelRequest{RewardModelId: m.Id}))
		requireCode(t, err, connect.CodeNotFound)
		_, err = c.RetryRewardModel(ctx, withKey(e.bob, &criticv1.RetryRewardModelRequest{RewardModelId: m.Id}))
		requireCode(t, err, connect.CodeNotFound)
		_, err = c.GetWeights(ctx, withKey(e.bob, &criticv1.GetWeightsRequest{RewardModelId: m.Id}))
		requireCode(t, err, connect.CodeNotFound)
		_, err = c.CreateRewardModel(ctx, withKey(e.bob, &criticv1.CreateRewardModelRequest{Name: "x", TraceIds: []string{refund.Summary.Id}}))
		requireCode(t, err, connect.CodeNotFound)
		bobs, err := c.ListRewardModels(ctx, withKey(e.bob, &criticv1.ListRewardModelsRequest{}))
		require.NoError(t, err)
		require.Empty(t, bobs.Msg.RewardModels)
		_, err = c.ListRewardModels(ctx, withKey(e.disabled, &criticv1.ListRewardModelsRequest{}))
		requireCode(t, err, connect.CodeNotFound)

		// Validation: REST's messages.
		_, err = c.CreateRewardModel(ctx, withKey(e.alice, &criticv1.CreateRewardModelRequest{Name: "x"}))
		ce := requireCode(t, err, connect.CodeInvalidArgument)
		require.Contains(t, ce.Message(), "select at least one trace")
		requireDetail(t, ce, "invalid_request", "trace_ids")
		_, err = c.CreateRewardModel(ctx, withKey(e.alice, &criticv1.CreateRewardModelRequest{TraceIds: []string{refund.Summary.Id}}))
		ce = requireCode(t, err, connect.CodeInvalidArgument)
		require.Contains(t, ce.Message(), "name is required")
		_, err = c.CreateRewardModel(ctx, withKey(e.alice, &criticv1.CreateRewardModelRequest{Name: "x", TraceIds: []string{refund.Summary.Id}, Epochs: proto.Int32(0)}))
		ce = requireCode(t, err, connect.CodeInvalidArgument)
		require.Contains(t, ce.Message(), "epochs must be 1–100")
		_, err = c.ScoreTrace(ctx, withKey(e.alice, &criticv1.ScoreTraceRequest{TraceId: refund.Summary.Id}))
		ce = requireCode(t, err, connect.CodeInvalidArgument)
		require.Contains(t, ce.Message(), "reward_model_id is required")
		// The deployment chooses compute: the JSON encoding refuses the field.
		code, body := e.postJSON(t, criticv1connect.RewardModelServiceCreateRewardModelProcedure, e.alice,
			`{"name":"x","trace_ids":["`+refund.Summary.Id+`"],"compute":"gpu"}`)
		require.Equal(t, http.StatusBadRequest, code, body)
		require.Contains(t, body, "invalid_argument")
		require.Contains(t, body, "compute")
		list, err := c.ListRewardModels(ctx, withKey(e.alice, &criticv1.ListRewardModelsRequest{}))
		require.NoError(t, err)
		require.Len(t, list.Msg.RewardModels, 1, "nothing was queued by the rejected requests")
	})
}

func TestQueryService(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	c := criticv1connect.NewQueryServiceClient(http.DefaultClient, e.url)
	refund, shippingID := e.importTwo(t, e.alice)

	// The snapshot is eventually consistent: poll until it shows the import.
	// Read-only keys may query.
	const sql = `SELECT id, external_id, step_count, created_at IS NOT NULL AS dated, NULL AS nothing FROM traces ORDER BY external_id`
	var res *connect.Response[criticv1.QueryResponse]
	require.Eventually(t, func() bool {
		var err error
		res, err = c.Query(ctx, withKey(e.aliceRO, &criticv1.QueryRequest{Sql: sql}))
		require.NoError(t, err)
		return len(res.Msg.Rows) == 2
	}, 20*time.Second, 100*time.Millisecond)
	require.Equal(t, []string{"id", "external_id", "step_count", "dated", "nothing"}, res.Msg.Columns)
	require.False(t, res.Msg.Truncated)
	require.Equal(t, []any{refund.Summary.Id, "refund-1", float64(4), true, nil}, res.Msg.Rows[0].AsSlice())
	require.Equal(t, []any{shippingID, "shipping-2", float64(2), true, nil}, res.Msg.Rows[1].AsSlice())

	// The same rows as REST's POST /query.
	code, body := e.rest(t, http.MethodPost, "/query", e.alice, map[string]any{"sql": sql})
	require.Equal(t, http.StatusOK, code, string(body))
	var viaREST struct {
		Columns   []string `json:"columns"`
		Rows      [][]any  `json:"rows"`
		Truncated bool     `json:"truncated"`
	}
	require.NoError(t, json.Unmarshal(body, &viaREST))
	require.Equal(t, viaREST.Columns, res.Msg.Columns)
	require.Len(t, viaREST.Rows, len(res.Msg.Rows))
	for i, r := range viaREST.Rows {
		require.Equal(t, r, res.Msg.Rows[i].AsSlice())
	}

	t.Run("grpc client gets the same rows", func(t *testing.T) {
		conn := grpcConn(t, e)
		gctx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+e.alice)
		out := &criticv1.QueryResponse{}
		require.NoError(t, conn.Invoke(gctx, criticv1connect.QueryServiceQueryProcedure, &criticv1.QueryRequest{Sql: sql}, out))
		require.True(t, proto.Equal(res.Msg, out), "gRPC %v\nConnect %v", out, res.Msg)
	})

	t.Run("errors", func(t *testing.T) {
		// Another owner's rows are not there for bob.
		bobs, err := c.Query(ctx, withKey(e.bob, &criticv1.QueryRequest{Sql: `SELECT count(*) AS n FROM traces`}))
		require.NoError(t, err)
		require.Equal(t, []any{float64(0)}, bobs.Msg.Rows[0].AsSlice())
		_, err = c.Query(ctx, withKey(e.disabled, &criticv1.QueryRequest{Sql: sql}))
		requireCode(t, err, connect.CodeNotFound)
		_, err = c.Query(ctx, withKey("", &criticv1.QueryRequest{Sql: sql}))
		requireCode(t, err, connect.CodeUnauthenticated)

		_, err = c.Query(ctx, withKey(e.alice, &criticv1.QueryRequest{}))
		ce := requireCode(t, err, connect.CodeInvalidArgument)
		require.Contains(t, ce.Message(), "sql is required")
		requireDetail(t, ce, "invalid_request", "sql")
		_, err = c.Query(ctx, withKey(e.alice, &criticv1.QueryRequest{Sql: "SELEKT 1"}))
		ce = requireCode(t, err, connect.CodeInvalidArgument)
		requireDetail(t, ce, "invalid_query", "")
		code, body := e.rest(t, http.MethodPost, "/query", e.alice, map[string]any{"sql": "SELEKT 1"})
		require.Equal(t, http.StatusUnprocessableEntity, code)
		var rb struct{ Detail string }
		require.NoError(t, json.Unmarshal(body, &rb))
		require.Equal(t, rb.Detail, ce.Message(), "REST's message")
	})
}

func toAny(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// ExportPairs with reward_model_id takes the same path as REST's
// ?reward_model_id (byte equality with the dataset is the e2e test's): not
// the caller's model is NotFound, a model whose dataset is not built yet is
// a conflict, and max_pairs does not combine with it.
func TestExportPairsOfAModel(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	refund, _ := e.importTwo(t, e.alice)
	rm := criticv1connect.NewRewardModelServiceClient(http.DefaultClient, e.url)
	created, err := rm.CreateRewardModel(ctx, withKey(e.alice, &criticv1.CreateRewardModelRequest{Name: "m", TraceIds: []string{refund.Summary.Id}}))
	require.NoError(t, err)
	id := created.Msg.RewardModel.Id
	c := criticv1connect.NewAnnotationServiceClient(http.DefaultClient, e.url)
	code := func(key string, req *criticv1.ExportPairsRequest) connect.Code {
		st, err := c.ExportPairs(ctx, withKey(key, req))
		require.NoError(t, err)
		for st.Receive() {
		}
		return connect.CodeOf(st.Err())
	}
	require.Equal(t, connect.CodeNotFound, code(e.bob, &criticv1.ExportPairsRequest{RewardModelId: new(id)}))
	require.Equal(t, connect.CodeAborted, code(e.alice, &criticv1.ExportPairsRequest{RewardModelId: new(id)}), "no dataset yet")
	require.Equal(t, connect.CodeInvalidArgument, code(e.alice, &criticv1.ExportPairsRequest{RewardModelId: new(id), MaxPairs: proto.Int32(3)}))
}
