package e2e

import (
	"net/http"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUsersAddMember: `critic users add-member ACCOUNT NAME` adds a
// reviewer (the default role) and prints their key once with the web
// app's sign-in link; the key is the member's (GET /me), may annotate but
// not import; --role viewer makes a viewer; a bad role or an unknown
// account is refused and adds nothing.
func TestUsersAddMember(t *testing.T) {
	t.Parallel()
	in := startServe(t)
	admin := in.newUser("crew", false)
	in.importTraces(admin, "stash", `{"id":"m-1","steps":[{"role":"user","content":"Refund order 1"},{"role":"assistant","content":"Refunded."}]}`)

	out, err := in.cli("users", "add-member", "crew", "rita")
	require.NoError(t, err, out)
	key := keyRe.FindStringSubmatch(out)[1]
	link := regexp.MustCompile(`sign in: (\S+)`).FindStringSubmatch(out)
	require.NotNil(t, link, out)
	require.Regexp(t, `^http://\S+/#invite=\S+$`, link[1])
	require.NotContains(t, link[1], key, "the link is a one-time invitation, not the key")
	require.Contains(t, out, "role reviewer")

	me := in.do("GET", "/api/v1/rm/me", key, nil).JSON(t)
	member := me["member"].(map[string]any)
	require.Equal(t, "rita", member["name"])
	require.Equal(t, "reviewer", member["role"])
	require.Equal(t, in.do("GET", "/api/v1/rm/me", admin, nil).JSON(t)["user_id"], me["user_id"], "the crew account's member")

	r := in.do("POST", "/api/v1/rm/traces/import", key, map[string]any{"format": "stash", "data": `{"id":"m-2","steps":[{"role":"user","content":"x"}]}`})
	require.Equal(t, http.StatusForbidden, r.Status, string(r.Body))
	require.Contains(t, string(r.Body), `permission \"ingest\"`)
	traces := in.do("GET", "/api/v1/rm/traces", key, nil).JSON(t)["traces"].([]any)
	require.Len(t, traces, 1)
	id := traces[0].(map[string]any)["id"].(string)
	r = in.do("POST", "/api/v1/rm/traces/"+id+"/annotations", key, map[string]any{"rating": 1})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Equal(t, "rita", r.JSON(t)["author_name"])

	out, err = in.cli("users", "add-member", "crew", "vic", "--role", "viewer")
	require.NoError(t, err, out)
	require.Contains(t, out, "role viewer")
	for _, bad := range [][]string{{"crew", "otto", "--role", "owner"}, {"nobody", "otto"}, {"crew"}} {
		out, err = in.cli(append([]string{"users", "add-member"}, bad...)...)
		require.Error(t, err, out)
	}
	list := in.do("GET", "/api/v1/rm/members", admin, nil).JSON(t)["members"].([]any)
	require.Len(t, list, 3, "crew, rita and vic; nothing from the refused calls")
}
