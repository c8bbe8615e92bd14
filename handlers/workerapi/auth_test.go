package workerapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/handlers/workerapi"
)

// TestRefusesEverythingButTheWorkerToken: the worker service is the
// workers' door, not the members'. Its one role check is the worker token
// (issue 36: "the worker service checks the role in one place"): an account
// member's API key — an admin's included — is 401 on every route, with a
// message that names the worker token, and the route's action never runs
// (the API has no commands wired; reaching one would panic).
func TestRefusesEverythingButTheWorkerToken(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	workerapi.New(workerapi.Config{Token: "the-worker-token"}).Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	call := func(path, auth string) (int, string) {
		t.Helper()
		req, err := http.NewRequest("POST", srv.URL+path, strings.NewReader(`{}`))
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		var body struct {
			Detail string `json:"detail"`
		}
		_ = json.NewDecoder(res.Body).Decode(&body)
		return res.StatusCode, body.Detail
	}

	paths := []string{
		jobs.HelloPath(),
		jobs.ClaimNextPath(jobs.KindTrain),
		jobs.JobPath(jobs.KindTrain, "model-1", "claim"),
		jobs.JobPath(jobs.KindScore, "run-1", "report"),
	}
	// A member's key looks like any API key the REST API accepts
	// ("critic_…"); the worker service does not consult accounts at all.
	for _, auth := range []string{
		"",
		"Bearer critic_adminmemberkey0123456789abcdef",
		"Bearer critic_reviewermemberkey0123456789",
		"the-worker-token", // without "Bearer "
		"Bearer the-worker-token-not",
	} {
		for _, p := range paths {
			status, msg := call(p, auth)
			require.Equal(t, http.StatusUnauthorized, status, "%s with %q", p, auth)
			require.Contains(t, msg, "worker token", "%s with %q: the refusal names what is missing", p, auth)
		}
	}
	status, msg := call(jobs.HelloPath(), "Bearer the-worker-token")
	require.Equal(t, http.StatusOK, status, msg)
}
