package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/members"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/pg/pgtest"
)

// TestAuditShowsAdjudications: `critic audit model` names an adjudication
// that stands in a pair for the members' ratings — who made it and why —
// and the dataset rebuilt from the log, adjudication included, equals the
// stored one.
func TestAuditShowsAdjudications(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	store := eventstore.New(pool, blobs)
	cmds := commands.New(store)
	in := &infra{pool: pool, blobs: blobs, store: store}
	u, err := cmds.CreateUser(ctx, "auditor", false)
	require.NoError(t, err)
	actor := commands.Actor{UserID: u.UserID}
	imp, err := cmds.ImportTraces(ctx, actor, commands.ImportTraces{Format: "stash", Data: []byte(
		`{"id":"a","steps":[{"role":"user","content":"q"},{"role":"assistant","content":"first"}]}` + "\n" +
			`{"id":"b","steps":[{"role":"user","content":"q"},{"role":"assistant","content":"second"}]}` + "\n" +
			`{"id":"c","steps":[{"role":"user","content":"q"},{"role":"assistant","content":"third"}]}`)})
	require.NoError(t, err)
	up, down := 1, -1
	for i, r := range []*int{&up, &down, &down} {
		_, err := cmds.AddAnnotation(ctx, actor, commands.AddAnnotation{TraceID: imp.TraceIDs[i], Rating: r, AuthorName: "rater"})
		require.NoError(t, err)
	}
	// A reviewer, Bea, disputes a and agrees on b and c.
	bea, err := cmds.AddMember(ctx, u.UserID, u.UserID, "Bea", members.Reviewer)
	require.NoError(t, err)
	beaActor := commands.Actor{UserID: u.UserID, MemberID: bea.Member.ID}
	beaAnn := map[string]string{}
	for i := range imp.TraceIDs {
		a, err := cmds.AddAnnotation(ctx, beaActor, commands.AddAnnotation{TraceID: imp.TraceIDs[i], Rating: &down, AuthorName: "Bea"})
		require.NoError(t, err)
		beaAnn[imp.TraceIDs[i]] = a.AnnotationID
	}
	// The admin turns both around: b is the better trace after all.
	adj, err := cmds.Adjudicate(ctx, actor, commands.Adjudicate{TraceID: imp.TraceIDs[1], Rating: &up, Reason: "b cites the policy"})
	require.NoError(t, err)
	_, err = cmds.Adjudicate(ctx, actor, commands.Adjudicate{TraceID: imp.TraceIDs[0], Rating: &down, Reason: "a invents a refund"})
	require.NoError(t, err)
	explicit := "explicit"
	req, err := cmds.RequestTraining(ctx, actor, commands.RequestTraining{Name: "m", TraceIDs: imp.TraceIDs, MaxPairs: 10,
		Config: &commands.TrainingConfig{AnnotationSource: &explicit}})
	require.NoError(t, err)
	// Two pairs: b over a and b over c.
	_, err = cmds.BuildDataset(ctx, req.ModelID)
	require.NoError(t, err)

	var out bytes.Buffer
	err = auditModel(ctx, in, cmds, req.ModelID, &out)
	t.Log(out.String())
	// Each pair names the member behind each rating, by name and id; an
	// adjudication names who adjudicated and why.
	require.Contains(t, out.String(), "adjudication "+adj.Adjudication.AdjudicationID+" by auditor (member "+u.UserID+") at ")
	require.Contains(t, out.String(), "annotation "+beaAnn[imp.TraceIDs[2]]+" by Bea (member "+bea.Member.ID+") at ")
	require.Contains(t, out.String(), `by auditor (member `+u.UserID+`), author name "rater" at `)
	require.NotContains(t, out.String(), beaAnn[imp.TraceIDs[0]], "Bea's rating of a is superseded")
	// The learning report's agreement: a is disputed (and adjudicated, as
	// b is); b and c agree. Alpha = 1 − D_o/D_e = 1 − (4/3)/(4/3) = 0.
	require.Contains(t, out.String(), "agreement of the training labels: 3 labeled target(s), 3 rated by two or more members, 1 disputed, "+
		"2 adjudicated, disputed labels kept; Krippendorff's alpha 0.000 over 3 co-rated target(s), too few to trust\n")
	require.Contains(t, out.String(), `rating +1, reason "b cites the policy" (supersedes the members' judgments of this target)`)
	require.Contains(t, out.String(), "2 pairs from 3 traces")
	require.Contains(t, out.String(), `author name "rater"`, "c's rating still counts")
	require.NotContains(t, out.String(), "rating +1, comment", "a's +1 is superseded")
	require.NotContains(t, out.String(), "MISMATCH")
	require.NoError(t, err)
}
