package commands

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/jobs"
)

// Every kind of job has a table, and every table at least a claim: the one
// handler serves exactly the kinds the contract names.
func TestEveryJobKindHasActions(t *testing.T) {
	t.Parallel()
	require.Len(t, jobTables, len(jobs.Kinds()))
	for _, k := range jobs.Kinds() {
		require.NotNil(t, jobTables[k], "kind %s has no table", k)
		require.NotNil(t, jobTables[k](&Streams{})[jobs.Claim], "kind %s has no claim", k)
	}
}

// What the one handler refuses before any stream is read: an unknown kind
// or action (404), a call without its worker (422), a body with a field
// the kind does not know (422, naming the body) — nothing is appended.
func TestJobCallsAreCheckedBeforeTheyRun(t *testing.T) {
	t.Parallel()
	c, ctx := &Commands{}, context.Background()
	job, _ := json.Marshal(jobs.TitleJob{TraceID: "t1", Revision: 1})
	var notFound *domain.NotFoundError
	_, err := c.Job.Handle(ctx, Job{Kind: "laundry", ID: "t1", Action: jobs.Claim, Call: jobs.Call{WorkerID: "w", Job: job}})
	require.ErrorAs(t, err, &notFound)
	_, err = c.Job.Handle(ctx, Job{Kind: jobs.KindTitle, ID: "t1", Action: jobs.HandBack, Call: jobs.Call{WorkerID: "w", Job: job}})
	require.ErrorAs(t, err, &notFound, "titles hold no lease to hand back")

	var invalid *domain.ValidationError
	_, err = c.Job.Handle(ctx, Job{Kind: jobs.KindTitle, ID: "t1", Action: jobs.Finish, Call: jobs.Call{Job: job}})
	require.ErrorAs(t, err, &invalid)
	require.Equal(t, "worker_id", invalid.Field)
	_, err = c.Job.Handle(ctx, Job{Kind: jobs.KindTitle, ID: "t1", Action: jobs.Finish, Call: jobs.Call{WorkerID: "w", Job: job, Body: json.RawMessage(`{"title":"x","colour":"red"}`)}})
	require.ErrorAs(t, err, &invalid)
	require.Equal(t, "body", invalid.Field)
	require.Contains(t, invalid.Message, "colour")
}
