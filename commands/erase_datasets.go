package commands

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/blob"
)

// eraseDatasets deletes the stored training datasets of the owner's models
// that were trained on the trace: a dataset holds its pairs' text in clear
// (the worker reads it), so a deleted trace would live on there (issue 37).
// The models keep their weights and keep scoring; their page and
// `critic audit model` say how many of their traces were erased since.
// Every attempt's dataset goes; a missing one is fine (an attempt that
// never built one, a repeated erasure).
func (c *Commands) eraseDatasets(ctx context.Context, ownerID, traceID string) error {
	streams, err := c.store.OwnerStreams(ctx, ownerID, events.RewardModelStream(""), 0)
	if err != nil {
		return err
	}
	for _, s := range streams {
		st, err := c.Model(ctx, strings.TrimPrefix(s, events.RewardModelStream("")))
		if err != nil {
			return err
		}
		if !slices.Contains(st.Requested.TraceIDs, traceID) {
			continue
		}
		for a := 1; a <= st.Attempt; a++ {
			key := DatasetKey(st.OwnerID, st.ID, a)
			if err := c.store.Blobs().Delete(ctx, key); err != nil && !errors.Is(err, blob.ErrNotFound) {
				return fmt.Errorf("erase trace %s: delete dataset %s: %w", traceID, key, err)
			}
		}
	}
	return nil
}
