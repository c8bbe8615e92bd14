package snapshot

import (
	"context"

	"github.com/criticml/critic/platform/duck"
)

// currentOf touches the traces of a scoring event's scores and answers the
// revision the snapshot holds of each: only scores of the current revision
// land (a re-import since the scoring made them stale).
func currentOf[S any](ctx context.Context, tx *duck.Tx, scores []S, trace func(S) string) (map[string]int, error) {
	seen := map[string]bool{}
	var ids []string
	for _, s := range scores {
		if id := trace(s); !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	tx.Touch(ids...)
	return tx.CurrentRevisions(ctx, ids)
}

// lastPer keeps the last of the scores with the same key, in order of
// their last appearance: one event scoring a step twice means its later
// score, as when each was written in turn.
func lastPer[S any](scores []S, key func(S) string) []S {
	last := make(map[string]int, len(scores))
	for i, s := range scores {
		last[key(s)] = i
	}
	out := make([]S, 0, len(last))
	for i, s := range scores {
		if last[key(s)] == i {
			out = append(out, s)
		}
	}
	return out
}
