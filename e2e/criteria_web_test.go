package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCriteriaWeb runs web/e2e/criteria.spec.ts in Chromium against the
// real binary (issue 33): criteria and guidelines defined on the Criteria
// page with clicks and typing, values set in the viewer and the queue by
// click and by key, each checked through the API (exactly those values, no
// rating), a comment full of digits and criterion letters storing no value,
// and the guidelines shown in the queue. Its own account and traces.
func TestCriteriaWeb(t *testing.T) {
	webDir := requireBrowser(t)

	in := startServe(t)
	key := in.newUser("criteria", false)
	ids := in.importTraces(key, "stash", strings.Join([]string{criteriaAgentTrace, criteriaQueueTrace}, "\n"))
	require.Len(t, ids, 2)

	require.Greater(t, runSpec(t, webDir, "criteria", "criteria.spec.ts", in.url, key, "CRITIC_E2E_CRITERIA_TRACE="+ids[0], "CRITIC_E2E_CRITERIA_QUEUE_TRACE="+ids[1]), 0, "no browser test ran")
}

// criteriaAgentTrace has one target of each kind: an assistant reply
// (step 2), a tool call (step 3) and the trace; step 4 is the tool's
// output, which no criterion applies to.
const criteriaAgentTrace = `{"title":"Criteria: order lookup","steps":[{"role":"user","content":"Where is order 5521?"},` +
	`{"role":"assistant","content":"Let me look it up."},` +
	`{"role":"assistant","content":"","tool_name":"lookup_order","tool_call_id":"call_1","tool_input":{"order_id":"5521"}},` +
	`{"role":"tool","content":"{\"status\":\"shipped\"}","tool_name":"lookup_order","tool_call_id":"call_1"},` +
	`{"role":"assistant","content":"Order 5521 has shipped."}]}`

// criteriaQueueTrace is the queue's first item (nothing annotated on it).
const criteriaQueueTrace = `{"title":"Criteria: queue item","steps":[{"role":"user","content":"Say hi."},{"role":"assistant","content":"Hi!"}]}`
