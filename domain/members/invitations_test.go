package members

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
)

// TestExpiredInvitationIsGone: a link past its expiry is 410 saying so,
// one second before it works.
func TestExpiredInvitationIsGone(t *testing.T) {
	team := &Team{AccountID: "acc", byID: map[string]*Member{}}
	team.put(Member{ID: "bea", Name: "bea", Role: Reviewer})
	exp := time.Date(2026, 1, 8, 0, 0, 0, 0, time.UTC)
	invs := map[string]*Invitation{"h": {MemberID: "bea", ExpiresAt: exp}}
	_, err := team.Accept(invs, "h", exp, "k")
	var gone *domain.GoneError
	require.ErrorAs(t, err, &gone)
	require.Contains(t, gone.Message, "has expired")
	ok, err := team.Accept(invs, "h", exp.Add(-time.Second), "k")
	require.NoError(t, err)
	require.Equal(t, "bea", ok.MemberID)
}
