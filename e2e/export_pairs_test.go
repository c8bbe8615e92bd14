package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestExportPairsOfAModelIsItsDataset: ?reward_model_id exports exactly
// that model's training pairs, in order, byte for byte what its stored
// dataset holds — here a selection of two of four traces, whose pairs are
// not the unfiltered export's — and later annotations do not change it.
func TestExportPairsOfAModelIsItsDataset(t *testing.T) {
	t.Parallel()
	in := startServe(t)
	key := in.newUser("exporter", false)
	stranger := in.newUser("not-the-owner", false)
	ids := ratedTraces(t, in, key)
	selection := []string{ids[3], ids[0]} // a bad then a good trace: selection order is the model's
	r := in.do("POST", "/api/v1/rm/reward-models", key, map[string]any{"name": "subset", "trace_ids": selection})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	modelID := r.JSON(t)["id"].(string)

	// The dataset is built by the dispatch projection.
	var datasetKey *string
	deadline := time.Now().Add(time.Minute)
	for datasetKey == nil {
		require.NoError(t, in.pool.QueryRow(context.Background(), `SELECT dataset_key FROM rm_reward_models WHERE id = $1`, modelID).Scan(&datasetKey))
		if datasetKey == nil {
			require.True(t, time.Now().Before(deadline), "no dataset was built:\n%s", in.logText())
			time.Sleep(100 * time.Millisecond)
		}
	}
	raw, err := os.ReadFile(filepath.Join(in.dataDir, "blobs", filepath.FromSlash(*datasetKey)))
	require.NoError(t, err)
	var ds struct {
		Pairs []struct {
			Chosen      string   `json:"chosen"`
			Rejected    string   `json:"rejected"`
			TraceIDs    []string `json:"trace_ids"`
			Granularity string   `json:"granularity"`
			ActionType  *string  `json:"action_type"`
		} `json:"pairs"`
	}
	require.NoError(t, json.Unmarshal(raw, &ds))
	require.NotEmpty(t, ds.Pairs)
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	for _, p := range ds.Pairs {
		require.NoError(t, enc.Encode(p))
	}

	got := in.do("GET", "/api/v1/rm/export/pairs?reward_model_id="+modelID, key, nil)
	require.Equal(t, http.StatusOK, got.Status, string(got.Body))
	require.Equal(t, want.String(), string(got.Body), "the model's pairs, byte for byte as its dataset holds them")

	all := in.do("GET", "/api/v1/rm/export/pairs", key, nil)
	require.Equal(t, http.StatusOK, all.Status)
	require.NotEqual(t, string(got.Body), string(all.Body), "the unfiltered export is every trace's pairs, not this model's")
	require.Greater(t, bytes.Count(all.Body, []byte("\n")), bytes.Count(got.Body, []byte("\n")))

	// Annotating afterwards changes the preview, not the model's dataset.
	d := in.getTrace(t, key, ids[1])
	require.Equal(t, http.StatusOK, in.do("POST", "/api/v1/rm/traces/"+ids[1]+"/annotations", key, map[string]any{"step_id": d.Steps[1]["id"], "rating": 1}).Status)
	again := in.do("GET", "/api/v1/rm/export/pairs?reward_model_id="+modelID, key, nil)
	require.Equal(t, string(got.Body), string(again.Body))

	// Not the caller's model, no such model, or max_pairs with it.
	require.Equal(t, http.StatusNotFound, in.do("GET", "/api/v1/rm/export/pairs?reward_model_id="+modelID, stranger, nil).Status)
	require.Equal(t, http.StatusNotFound, in.do("GET", "/api/v1/rm/export/pairs?reward_model_id=00000000-0000-0000-0000-000000000000", key, nil).Status)
	r = in.do("GET", "/api/v1/rm/export/pairs?reward_model_id="+modelID+"&max_pairs=1", key, nil)
	require.Equal(t, http.StatusUnprocessableEntity, r.Status)
	require.Equal(t, "max_pairs", r.JSON(t)["field"])
}
