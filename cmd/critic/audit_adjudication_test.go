package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/members"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/pg/pgtest"
	"github.com/criticml/critic/projections/readmodel"
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
	u, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "auditor"})
	require.NoError(t, err)
	actor := commands.Actor{UserID: u.UserID}
	imp, err := cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: actor, Input: commands.ImportTracesInput{Format: "stash", Data: []byte(
		`{"id":"a","steps":[{"role":"user","content":"q"},{"role":"assistant","content":"first"}]}` + "\n" +
			`{"id":"b","steps":[{"role":"user","content":"q"},{"role":"assistant","content":"second"}]}` + "\n" +
			`{"id":"c","steps":[{"role":"user","content":"q"},{"role":"assistant","content":"third"}]}`)}})
	require.NoError(t, err)
	up, down := 1, -1
	for i, r := range []*int{&up, &down, &down} {
		_, err := cmds.AddAnnotation.Handle(ctx, commands.AddAnnotation{Actor: actor, Input: commands.AddAnnotationInput{TraceID: imp.TraceIDs[i], Rating: r, AuthorName: "rater"}})
		require.NoError(t, err)
	}
	// A reviewer, Bea, disputes a and agrees on b and c.
	bea, err := cmds.AddMember.Handle(ctx, commands.AddMember{AccountID: u.UserID, By: u.UserID, Name: "Bea", Role: members.Reviewer})
	require.NoError(t, err)
	beaActor := commands.Actor{UserID: u.UserID, MemberID: bea.Member.ID}
	beaAnn := map[string]string{}
	for i := range imp.TraceIDs {
		a, err := cmds.AddAnnotation.Handle(ctx, commands.AddAnnotation{Actor: beaActor, Input: commands.AddAnnotationInput{TraceID: imp.TraceIDs[i], Rating: &down, AuthorName: "Bea"}})
		require.NoError(t, err)
		beaAnn[imp.TraceIDs[i]] = a.AnnotationID
	}
	// The admin turns both around: b is the better trace after all.
	adj, err := cmds.Adjudicate.Handle(ctx, commands.Adjudicate{Actor: actor, Input: commands.AdjudicateInput{TraceID: imp.TraceIDs[1], Rating: &up, Reason: "b cites the policy"}})
	require.NoError(t, err)
	_, err = cmds.Adjudicate.Handle(ctx, commands.Adjudicate{Actor: actor, Input: commands.AdjudicateInput{TraceID: imp.TraceIDs[0], Rating: &down, Reason: "a invents a refund"}})
	require.NoError(t, err)
	explicit := "explicit"
	req, err := cmds.RequestTraining.Handle(ctx, commands.RequestTraining{Actor: actor, Input: commands.RequestTrainingInput{Name: "m", TraceIDs: imp.TraceIDs, MaxPairs: 10,
		Config: &commands.TrainingConfig{AnnotationSource: &explicit}}})
	require.NoError(t, err)
	// Two pairs: b over a and b over c.
	_, err = cmds.BuildDataset.Handle(ctx, commands.BuildDataset{ModelID: req.ModelID})
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
	require.NotContains(t, out.String(), "agrees with this model", "no scores before it succeeded")

	// Once it succeeded, each member's agreement with its scores (mean 0):
	// a −1, b +1, c −1. The auditor rated a +1, b −1, c −1 (1 of 3 with
	// the model); Bea −1 everywhere (2 of 3).
	job, err := cmds.ClaimTraining.Handle(ctx, commands.ClaimTraining{WorkerID: "w1", ModelID: req.ModelID, Attempt: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.NoError(t, blobs.Put(ctx, job.ArtifactKey, []byte("checkpoint")))
	var lines []string
	for i, s := range []int{-1, 1, -1} {
		lines = append(lines, fmt.Sprintf(`{"trace_id":%q,"score":%d}`, imp.TraceIDs[i], s))
	}
	sk := jobs.ScoresKey(u.UserID, req.ModelID, 1)
	require.NoError(t, blobs.Put(ctx, sk, []byte(strings.Join(lines, "\n"))))
	_, err = cmds.CompleteTraining.Handle(ctx, commands.CompleteTraining{WorkerID: "w1", ModelID: req.ModelID, Attempt: 1,
		Metrics: json.RawMessage(`{"train_pairs":2,"eval_pairs":0}`), RewardStats: json.RawMessage(`{"mean":0,"std":1,"count":3}`), ScoresKey: sk})
	require.NoError(t, err)
	_, err = readmodel.New(pool, blobs, slog.New(slog.NewTextHandler(io.Discard, nil))).WithKeyring(store.Keyring()).Replay(ctx, store)
	require.NoError(t, err)
	out.Reset()
	err = auditModel(ctx, in, cmds, req.ModelID, &out)
	t.Log(out.String())
	require.NoError(t, err)
	// Each line starts with the member's name, "member" said once.
	require.Contains(t, out.String(), "\nauditor (member "+u.UserID+") agrees with this model on 1 of 3 target(s), too few to trust\n")
	require.Contains(t, out.String(), "\nBea (member "+bea.Member.ID+") agrees with this model on 2 of 3 target(s), too few to trust\n")
}
