package apiserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/jobs"
)

// TestModelLearningReportAgreement: a reward model's learning report says
// how much of its training data the team disputed, adjudicated and left
// out, and the alpha of the labels it learned from (issue 36). A fixed
// labeling by an admin and two reviewers over six traces — two agreed,
// one disputed and left alone, one disputed and adjudicated, two rated by
// one member each — gives exact counts in GET /reward-models/{id}, and an
// alpha equal to Krippendorff's formula computed here by hand.
func TestModelLearningReportAgreement(t *testing.T) {
	e := startOps(t, nil)
	ctx := context.Background()
	r := e.importTraces(t, "agree-up", "agree-down", "split", "settled", "solo-admin", "solo-bea")
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var imported struct {
		TraceIDs []string `json:"trace_ids"`
	}
	require.NoError(t, json.Unmarshal(r.body, &imported))
	ids := imported.TraceIDs
	require.Len(t, ids, 6)

	keyOf := map[string]string{"admin": e.key}
	for _, name := range []string{"Bea", "Cy"} {
		r := e.do(t, "POST", "/api/v1/rm/members", map[string]any{"name": name, "role": "reviewer"})
		require.Equal(t, http.StatusCreated, r.status, string(r.body))
		var added struct {
			APIKey string `json:"api_key"`
		}
		require.NoError(t, json.Unmarshal(r.body, &added))
		keyOf[name] = added.APIKey
	}
	admin := e.key
	rate := func(who, trace string, rating int) {
		t.Helper()
		e.key = keyOf[who]
		defer func() { e.key = admin }()
		r := e.do(t, "POST", "/api/v1/rm/traces/"+trace+"/annotations", map[string]any{"rating": rating})
		require.Equal(t, http.StatusOK, r.status, string(r.body))
	}
	labels := []struct {
		trace int
		by    map[string]int
	}{
		{0, map[string]int{"admin": 1, "Bea": 1}},
		{1, map[string]int{"admin": -1, "Bea": -1}},
		{2, map[string]int{"admin": 1, "Bea": -1}},          // disputed, never settled
		{3, map[string]int{"admin": -1, "Bea": 1, "Cy": 1}}, // disputed, adjudicated below
		{4, map[string]int{"admin": 1}},
		{5, map[string]int{"Bea": -1}},
	}
	for _, l := range labels {
		for who, v := range l.by {
			rate(who, ids[l.trace], v)
		}
	}
	r = e.do(t, "POST", "/api/v1/rm/traces/"+ids[3]+"/adjudications", map[string]any{"rating": 1, "reason": "the answer cites the policy"})
	require.Equal(t, http.StatusCreated, r.status, string(r.body))

	r = e.do(t, "POST", "/api/v1/rm/reward-models", map[string]any{"name": "agreed only", "trace_ids": ids,
		"training_config": map[string]any{"annotation_source": "explicit", "exclude_disputed": true}})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var m struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(r.body, &m))
	r = e.do(t, "GET", "/api/v1/rm/reward-models/"+m.ID, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	require.Contains(t, string(r.body), `"agreement":null`, "no dataset yet, no agreement")

	res, err := e.srv.Cmds.BuildDataset.Handle(ctx, commands.BuildDataset{ModelID: m.ID})
	require.NoError(t, err)
	require.NoError(t, e.srv.Waiter.Wait(ctx, res.LastEventID))
	r = e.do(t, "GET", "/api/v1/rm/reward-models/"+m.ID, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	requireSchema(t, "RewardModelDetail", r.body)
	var got struct {
		NumPairs  *int `json:"num_pairs"`
		Agreement struct {
			Judged      int `json:"judged"`
			CoRated     int `json:"co_rated"`
			Disputed    int `json:"disputed"`
			Adjudicated int `json:"adjudicated"`
			Excluded    int `json:"excluded"`
			Alpha       struct {
				Value  *float64 `json:"value"`
				N      int      `json:"n"`
				TooFew bool     `json:"too_few"`
			} `json:"alpha"`
			Members []json.RawMessage `json:"members"`
		} `json:"agreement"`
	}
	require.NoError(t, json.Unmarshal(r.body, &got))
	// Chosen: agree-up (+2), settled (+1, the adjudication), solo-admin;
	// rejected: agree-down, solo-bea; split is left out.
	require.NotNil(t, got.NumPairs)
	require.Equal(t, 6, *got.NumPairs)
	a := got.Agreement
	require.Equal(t, 6, a.Judged, "every trace has a member label")
	require.Equal(t, 4, a.CoRated)
	require.Equal(t, 2, a.Disputed, "split and settled")
	require.Equal(t, 1, a.Adjudicated)
	require.Equal(t, 1, a.Excluded, "split: disputed and not adjudicated")
	require.Equal(t, 4, a.Alpha.N)
	require.True(t, a.Alpha.TooFew, "4 co-rated targets are under min_sample")
	require.NotNil(t, a.Alpha.Value)
	require.InDelta(t, referenceAlpha(labels), *a.Alpha.Value, 1e-12)
	require.InDelta(t, 0.2, *a.Alpha.Value, 1e-12)
	require.Empty(t, a.Members, "the model has no scores to agree with yet")

	// Once it succeeded, each member's agreement with its scores (mean 0:
	// a trace is preferred when its score is positive).
	job, err := e.srv.Cmds.ClaimTraining.Handle(ctx, commands.ClaimTraining{WorkerID: "w1", ModelID: m.ID, Attempt: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.NoError(t, e.blobs.Put(ctx, job.ArtifactKey, []byte("checkpoint")))
	var lines []string
	for i, s := range []int{1, -1, 1, 1, -1, -1} {
		lines = append(lines, fmt.Sprintf(`{"trace_id":%q,"score":%d}`, ids[i], s))
	}
	sk := jobs.ScoresKey(e.userID, m.ID, 1)
	require.NoError(t, e.blobs.Put(ctx, sk, []byte(strings.Join(lines, "\n"))))
	res, err = e.srv.Cmds.CompleteTraining.Handle(ctx, commands.CompleteTraining{WorkerID: "w1", ModelID: m.ID, Attempt: 1,
		Metrics: json.RawMessage(`{"train_pairs":6,"eval_pairs":0,"eval_accuracy":null}`), RewardStats: json.RawMessage(`{"mean":0,"std":1,"count":6}`), ScoresKey: sk})
	require.NoError(t, err)
	require.NoError(t, e.srv.Waiter.Wait(ctx, res.LastEventID))
	r = e.do(t, "GET", "/api/v1/rm/reward-models/"+m.ID, nil)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	requireSchema(t, "RewardModelDetail", r.body)
	var done struct {
		Status    string `json:"status"`
		Agreement struct {
			Disputed int `json:"disputed"`
			Members  []struct {
				Name   string `json:"name"`
				Judged int    `json:"judged"`
				Model  struct {
					Value  *float64 `json:"value"`
					N      int      `json:"n"`
					TooFew bool     `json:"too_few"`
				} `json:"model"`
			} `json:"members"`
		} `json:"agreement"`
	}
	require.NoError(t, json.Unmarshal(r.body, &done))
	require.Equal(t, "succeeded", done.Status)
	require.Equal(t, 2, done.Agreement.Disputed, "the recorded figures stay")
	byName := map[string][3]float64{}
	for _, mf := range done.Agreement.Members {
		require.NotNil(t, mf.Model.Value, mf.Name)
		require.True(t, mf.Model.TooFew, mf.Name)
		byName[mf.Name] = [3]float64{float64(mf.Judged), float64(mf.Model.N), *mf.Model.Value}
	}
	// ops (the admin) matches the model's sign on agree-up, agree-down and
	// split, not on settled or solo-admin; Bea on all but split; Cy on
	// settled.
	require.Equal(t, map[string][3]float64{"ops": {5, 5, 0.6}, "Bea": {5, 5, 0.8}, "Cy": {1, 1, 1}}, byName)
}

// referenceAlpha is Krippendorff's alpha with the interval metric
// δ²(c, k) = (c − k)², straight from the formula: the coincidence matrix
// o_ck = Σ_u (pairs of values c, k in unit u) / (m_u − 1) over units with
// m_u ≥ 2, n_c = Σ_k o_ck, n = Σ_c n_c, D_o = Σ o_ck δ² / n,
// D_e = Σ n_c n_k δ² / (n (n − 1)), alpha = 1 − D_o / D_e.
func referenceAlpha(labels []struct {
	trace int
	by    map[string]int
}) float64 {
	o := map[[2]int]float64{}
	for _, l := range labels {
		if len(l.by) < 2 {
			continue
		}
		var vs []int
		for _, v := range l.by {
			vs = append(vs, v)
		}
		for i := range vs {
			for j := range vs {
				if i != j {
					o[[2]int{vs[i], vs[j]}] += 1 / float64(len(vs)-1)
				}
			}
		}
	}
	nc := map[int]float64{}
	var n, do float64
	for ck, w := range o {
		nc[ck[0]] += w
		n += w
		d := float64(ck[0] - ck[1])
		do += w * d * d
	}
	var de float64
	for c, a := range nc {
		for k, b := range nc {
			d := float64(c - k)
			de += a * b * d * d
		}
	}
	return 1 - (do/n)/(de/(n*(n-1)))
}
