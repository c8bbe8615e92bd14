package apiserver_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestInvitationSignsInOnce (issue 36): POST /members answers a one-time
// sign-in link (/#invite=<token>), never the member's key. Accepting it
// without any key answers a fresh key that works as the member; the same
// link again is 410 invitation_spent saying it was used and to ask the
// admin; a removed member's link is 410 too, and their accepted key stops
// working with the removal.
func TestInvitationSignsInOnce(t *testing.T) {
	e := startOps(t, nil)
	invite := func(name, role string) (id, key, token string) {
		r := e.do(t, "POST", "/api/v1/rm/members", map[string]any{"name": name, "role": role})
		require.Equal(t, http.StatusCreated, r.status, string(r.body))
		var added struct {
			Member    struct{ ID string } `json:"member"`
			APIKey    string              `json:"api_key"`
			SignInURL string              `json:"sign_in_url"`
		}
		require.NoError(t, json.Unmarshal(r.body, &added))
		u, err := url.Parse(added.SignInURL)
		require.NoError(t, err)
		token, ok := strings.CutPrefix(u.Fragment, "invite=")
		require.True(t, ok, added.SignInURL)
		require.NotContains(t, added.SignInURL, added.APIKey, "the link must not carry a permanent key")
		return added.Member.ID, added.APIKey, token
	}
	accept := func(token string) reply {
		return e.do(t, "POST", "/api/v1/rm/invitations/accept", map[string]any{"token": token}, "Authorization", "")
	}

	beaID, beaFirstKey, token := invite("bea", "reviewer")
	r := accept(token)
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var got struct {
		APIKey string `json:"api_key"`
		Member struct {
			ID, Name, Role string
		} `json:"member"`
		Account struct{ ID, Name string } `json:"account"`
	}
	require.NoError(t, json.Unmarshal(r.body, &got))
	require.Equal(t, beaID, got.Member.ID)
	require.Equal(t, "bea", got.Member.Name)
	require.Equal(t, "reviewer", got.Member.Role)
	require.Equal(t, e.userID, got.Account.ID)
	require.NotEqual(t, beaFirstKey, got.APIKey, "a fresh key, not the one POST /members showed")
	me := e.as(t, got.APIKey, "GET", "/api/v1/rm/me", nil)
	require.Equal(t, http.StatusOK, me.status, string(me.body))
	require.Contains(t, string(me.body), `"id":"`+beaID+`"`)

	again := accept(token)
	require.Equal(t, http.StatusGone, again.status, string(again.body))
	require.Contains(t, string(again.body), `"code":"invitation_spent"`)
	require.Contains(t, string(again.body), "already used")
	require.Contains(t, string(again.body), "ask your admin for a new one")

	vicID, _, vicToken := invite("vic", "viewer")
	require.Equal(t, http.StatusNoContent, e.do(t, "DELETE", "/api/v1/rm/members/"+vicID, nil).status)
	gone := accept(vicToken)
	require.Equal(t, http.StatusGone, gone.status, string(gone.body))
	require.Contains(t, string(gone.body), "no longer on the team")

	bogus := accept(e.userID + ".not-a-token")
	require.Equal(t, http.StatusGone, bogus.status, string(bogus.body))
	empty := accept(" ")
	require.Equal(t, http.StatusUnprocessableEntity, empty.status, string(empty.body))
	require.Contains(t, string(empty.body), `"field":"token"`)

	require.Equal(t, http.StatusNoContent, e.do(t, "DELETE", "/api/v1/rm/members/"+beaID, nil).status)
	require.Equal(t, http.StatusUnauthorized, e.as(t, got.APIKey, "GET", "/api/v1/rm/me", nil).status, "removing bea revokes the key her link issued")
}
