package apiserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/handlers/idempotency"
)

// TestIdempotencyKeyOnPatchPutDelete: an Idempotency-Key on a PATCH, PUT or
// DELETE works as on a POST. Re-rating an annotation (a PATCH) sent twice
// with one key is applied once, and the retry is answered the first answer
// marked Idempotent-Replayed; the same key with another body, or on another
// method, is 422 idempotency_key_reused and changes nothing; a DELETE sent
// twice is answered 204 both times (not 404 the second) and removes once; a
// settings PUT replays likewise.
func TestIdempotencyKeyOnPatchPutDelete(t *testing.T) {
	e := startOps(t, nil)
	imported := e.importTraces(t, "idem-writes")
	require.Equal(t, http.StatusOK, imported.status, string(imported.body))
	var ids struct {
		TraceIDs []string `json:"trace_ids"`
	}
	require.NoError(t, json.Unmarshal(imported.body, &ids))
	traceID := ids.TraceIDs[0]
	added := e.do(t, "POST", "/api/v1/rm/traces/"+traceID+"/annotations", map[string]any{"rating": 1})
	require.Equal(t, http.StatusOK, added.status, string(added.body))
	var vote valueJSON
	require.NoError(t, json.Unmarshal(added.body, &vote))
	typed := func(typ string) int {
		t.Helper()
		var n int
		require.NoError(t, e.pool.QueryRow(context.Background(), `SELECT count(*) FROM events WHERE type = $1`, typ).Scan(&n))
		return n
	}
	rating := func() *int {
		t.Helper()
		for _, a := range e.traceAnnotations(t, traceID) {
			if a.ID == vote.ID {
				return a.Rating
			}
		}
		return nil
	}
	path := "/api/v1/rm/annotations/" + vote.ID

	first := e.do(t, "PATCH", path, map[string]any{"rating": -1}, "Idempotency-Key", "re-rate")
	require.Equal(t, http.StatusOK, first.status, string(first.body))
	require.Empty(t, first.header.Get(idempotency.ReplayedHeader))
	require.Equal(t, 1, typed(events.AnnotationEdited))
	all := eventCount(t, e.pool)

	again := e.do(t, "PATCH", path, map[string]any{"rating": -1}, "Idempotency-Key", "re-rate")
	require.Equal(t, http.StatusOK, again.status, string(again.body))
	require.Equal(t, "true", again.header.Get(idempotency.ReplayedHeader))
	require.Equal(t, string(first.body), string(again.body), "the first answer")
	require.Equal(t, 1, typed(events.AnnotationEdited), "applied once")
	require.Equal(t, all, eventCount(t, e.pool), "nothing appended")

	otherBody := e.do(t, "PATCH", path, map[string]any{"rating": 1}, "Idempotency-Key", "re-rate")
	require.Equal(t, http.StatusUnprocessableEntity, otherBody.status, string(otherBody.body))
	require.Equal(t, "idempotency_key_reused", errorCode(t, otherBody))
	require.Contains(t, string(otherBody.body), "PATCH "+path, "names the request the key was used for")
	otherMethod := e.do(t, "DELETE", path, nil, "Idempotency-Key", "re-rate")
	require.Equal(t, http.StatusUnprocessableEntity, otherMethod.status, string(otherMethod.body))
	require.Equal(t, "idempotency_key_reused", errorCode(t, otherMethod))
	require.Equal(t, all, eventCount(t, e.pool))
	require.NotNil(t, rating())
	require.Equal(t, -1, *rating(), "the refused requests changed nothing")

	removed := e.do(t, "DELETE", path, nil, "Idempotency-Key", "take-back")
	require.Equal(t, http.StatusNoContent, removed.status, string(removed.body))
	require.Equal(t, 1, typed(events.AnnotationRemoved))
	all = eventCount(t, e.pool)
	removedAgain := e.do(t, "DELETE", path, nil, "Idempotency-Key", "take-back")
	require.Equal(t, http.StatusNoContent, removedAgain.status, "the first answer, not 404: %s", removedAgain.body)
	require.Equal(t, "true", removedAgain.header.Get(idempotency.ReplayedHeader))
	require.Equal(t, 1, typed(events.AnnotationRemoved), "removed once")
	require.Equal(t, all, eventCount(t, e.pool))
	require.Nil(t, rating())
	// Without a key a second DELETE is not found: what a retry of a lost
	// answer would have told the client.
	require.Equal(t, http.StatusNotFound, e.do(t, "DELETE", path, nil).status)

	put := e.do(t, "PUT", "/api/v1/rm/guidelines", map[string]any{"markdown": "Rate the reply, not the tone."}, "Idempotency-Key", "guide")
	require.Equal(t, http.StatusOK, put.status, string(put.body))
	all = eventCount(t, e.pool)
	putAgain := e.do(t, "PUT", "/api/v1/rm/guidelines", map[string]any{"markdown": "Rate the reply, not the tone."}, "Idempotency-Key", "guide")
	require.Equal(t, http.StatusOK, putAgain.status, string(putAgain.body))
	require.Equal(t, "true", putAgain.header.Get(idempotency.ReplayedHeader))
	require.Equal(t, string(put.body), string(putAgain.body))
	require.Equal(t, all, eventCount(t, e.pool))
}

// TestKeyedTraceDeletionReplaysItsAnswer: erasing a trace forgets the
// stored answers that could quote it, but not the DELETE's own. A keyed
// DELETE /traces/{id} sent twice is answered 204 both times, the second
// replayed (not 404 from running again), and the trace is gone; a keyed
// annotation POST on it, whose stored answer quoted its comment, is
// forgotten: its retry runs afresh and finds the trace gone.
func TestKeyedTraceDeletionReplaysItsAnswer(t *testing.T) {
	e := startOps(t, nil)
	imported := e.importTraces(t, "idem-erased", "idem-kept")
	require.Equal(t, http.StatusOK, imported.status, string(imported.body))
	var ids struct {
		TraceIDs []string `json:"trace_ids"`
	}
	require.NoError(t, json.Unmarshal(imported.body, &ids))
	traceID, kept := ids.TraceIDs[0], ids.TraceIDs[1]
	const marker = "MARKER-IDEM-7c2f"
	quoting := func() int {
		t.Helper()
		var n int
		require.NoError(t, e.pool.QueryRow(context.Background(),
			`SELECT count(*) FROM idempotency_keys WHERE position(convert_to($1, 'UTF8') in body) > 0`, marker).Scan(&n))
		return n
	}
	annotate := func() reply {
		t.Helper()
		return e.do(t, "POST", "/api/v1/rm/traces/"+traceID+"/annotations", map[string]any{"rating": 1, "comment": "Call " + marker},
			"Idempotency-Key", "note-on-erased")
	}
	added := annotate()
	require.Equal(t, http.StatusOK, added.status, string(added.body))
	require.Equal(t, "true", annotate().header.Get(idempotency.ReplayedHeader), "the annotation's answer is stored")
	require.Equal(t, 1, quoting(), "the stored answer quotes the comment")

	path := "/api/v1/rm/traces/" + traceID
	deleted := e.do(t, "DELETE", path, nil, "Idempotency-Key", "erase-it")
	require.Equal(t, http.StatusNoContent, deleted.status, string(deleted.body))
	require.Empty(t, deleted.header.Get(idempotency.ReplayedHeader))
	all := eventCount(t, e.pool)
	again := e.do(t, "DELETE", path, nil, "Idempotency-Key", "erase-it")
	require.Equal(t, http.StatusNoContent, again.status, "the first answer, not 404: %s", again.body)
	require.Equal(t, "true", again.header.Get(idempotency.ReplayedHeader))
	require.Empty(t, again.body)
	require.Equal(t, all, eventCount(t, e.pool), "nothing appended by the retry")
	require.Equal(t, http.StatusNotFound, e.do(t, "GET", path, nil).status, "the trace is gone")
	require.Equal(t, http.StatusOK, e.do(t, "GET", "/api/v1/rm/traces/"+kept, nil).status, "the other trace stays")

	require.Zero(t, quoting(), "no stored answer quotes the erased trace")
	retried := annotate()
	require.Equal(t, http.StatusNotFound, retried.status, "served afresh: %s", retried.body)
	require.Empty(t, retried.header.Get(idempotency.ReplayedHeader), "the annotation's answer was forgotten")
	require.NotContains(t, string(retried.body), marker)
}
