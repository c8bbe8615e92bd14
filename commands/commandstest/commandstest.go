// Package commandstest holds test fixtures written with the command side,
// shared by the packages whose tests need an account's labeled traces (the
// command, projection and use-case tests each wrote the same import and
// ratings before).
package commandstest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
)

// RatedTraces imports three one-action traces for actor — "good" rated +1,
// "bad" rated −1 (the same question, so they make a preference pair) and
// "fine" rated +1 on another question — and returns their ids in that
// order: the smallest set a reward model trains on.
func RatedTraces(t testing.TB, cmds *commands.Commands, actor commands.Actor) []string {
	t.Helper()
	ctx := context.Background()
	res, err := cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: actor, Input: commands.ImportTracesInput{Format: "stash", Data: []byte(
		`{"id":"a","steps":[{"role":"user","content":"q"},{"role":"assistant","content":"good"}]}` + "\n" +
			`{"id":"b","steps":[{"role":"user","content":"q"},{"role":"assistant","content":"bad"}]}` + "\n" +
			`{"id":"c","steps":[{"role":"user","content":"q2"},{"role":"assistant","content":"fine"}]}`)}})
	require.NoError(t, err)
	for i, r := range []int{1, -1, 1} {
		_, err := cmds.AddAnnotation.Handle(ctx, commands.AddAnnotation{Actor: actor, Input: commands.AddAnnotationInput{TraceID: res.TraceIDs[i], Rating: &r, AuthorName: "t"}})
		require.NoError(t, err)
	}
	return res.TraceIDs
}
