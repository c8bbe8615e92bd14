package eventstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/keyring"
	"github.com/criticml/critic/platform/pg/pgtest"
)

func newSealingStore(t *testing.T) (*eventstore.Store, *keyring.Ring, string) {
	s, ring, dir, _ := newSealingStoreMaster(t)
	return s, ring, dir
}

func newSealingStoreMaster(t testing.TB) (*eventstore.Store, *keyring.Ring, string, []byte) {
	pool := pgtest.NewPool(t)
	dir := t.TempDir()
	blobs, err := blob.NewLocal(dir)
	require.NoError(t, err)
	master := make([]byte, keyring.KeySize)
	_, _ = rand.Read(master)
	ring, err := keyring.New(pool, master)
	require.NoError(t, err)
	return eventstore.New(pool, blobs, eventstore.WithKeyring(ring)), ring, dir, master
}

// noMarker fails when a file under dir contains marker.
func noMarker(t *testing.T, dir, marker string) {
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		require.NotContains(t, string(b), marker, path)
		return nil
	}))
}

// A trace stream's payloads are stored sealed; every reader opens them; once
// the trace's key is destroyed they read as erased, the claim-checked blob
// is gone, and another trace is untouched.
func TestTracePayloadsAreSealedAndShredded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, ring, dir, master := newSealingStoreMaster(t)
	meta := eventstore.Meta{Actor: "system"}
	a, b := "trace/"+uuid.NewString(), "trace/"+uuid.NewString()
	// Random text: sealed payloads are compressed first, and this one must
	// still be large enough to be claim-checked.
	noise := make([]byte, eventstore.MaxInlinePayload/2)
	_, _ = rand.Read(noise)
	big := "MARKER-A MARKER-A " + hex.EncodeToString(noise)
	envs, err := s.Append(ctx, meta, nil, []events.New{
		ev(a, events.TraceImported, map[string]string{"text": "MARKER-A small"}),
		ev(a, events.AnnotationAdded, map[string]string{"text": big}),
		ev(b, events.TraceImported, map[string]string{"text": "MARKER-B"}),
		ev("user/x", "user.created.v1", map[string]string{"name": "clear"}),
	})
	require.NoError(t, err)

	var dump string
	require.NoError(t, s.Pool().QueryRow(ctx, "SELECT string_agg(payload::text, ' ') FROM events").Scan(&dump))
	require.NotContains(t, dump, "MARKER", "trace payloads are sealed in the row")
	require.Contains(t, dump, `"clear"`, "other streams stay in clear")
	require.Contains(t, dump, `"sealed"`)

	loaded, err := s.LoadStreams(ctx, []string{a, b})
	require.NoError(t, err)
	require.JSONEq(t, `{"text":"MARKER-A small"}`, string(loaded[a][0].Payload))
	require.Contains(t, string(loaded[a][1].Payload), "MARKER-A MARKER-A")

	// What the relay forwards (as stored) opens with Resolve.
	raw, err := s.ReadAfter(ctx, 0, 10)
	require.NoError(t, err)
	require.True(t, events.IsSealed(raw[0].Payload))
	require.True(t, eventstore.IsClaimCheck(raw[1].Payload))
	opened, err := eventstore.Resolve(ctx, s.Blobs(), ring, raw[1])
	require.NoError(t, err)
	require.Contains(t, string(opened.Payload), "MARKER-A")
	_, err = eventstore.Resolve(ctx, s.Blobs(), nil, raw[0])
	require.ErrorContains(t, err, "no keyring")

	// A sealed payload copied onto another event does not open.
	moved := raw[2]
	moved.Payload = raw[0].Payload
	_, err = eventstore.Resolve(ctx, s.Blobs(), ring, moved)
	require.ErrorContains(t, err, "authentication")

	require.NoError(t, s.EraseStream(ctx, a))
	_, err = eventstore.Resolve(ctx, s.Blobs(), ring, raw[0])
	var erased *events.ErasedError
	require.ErrorAs(t, err, &erased)
	require.Equal(t, envs[0].ID, erased.EventID)
	exists, err := s.Blobs().Exists(ctx, "events/"+envs[1].ID+".json")
	require.NoError(t, err)
	require.False(t, exists, "the claim-checked blob is deleted")
	noMarker(t, dir, "MARKER-A")

	// A fresh ring (another process) sees the tombstone too.
	other, err := keyring.New(s.Pool(), master)
	require.NoError(t, err)
	_, err = eventstore.Resolve(ctx, s.Blobs(), other, raw[0])
	require.ErrorAs(t, err, &erased)

	loaded, err = s.LoadStreams(ctx, []string{a, b})
	require.NoError(t, err)
	require.Empty(t, loaded[a], "erased events are not loaded")
	require.JSONEq(t, `{"text":"MARKER-B"}`, string(loaded[b][0].Payload))

	// Nothing new is written under a destroyed key.
	_, err = s.Append(ctx, meta, nil, []events.New{ev(a, events.AnnotationAdded, map[string]string{"text": "again"})})
	require.ErrorAs(t, err, &erased)
	// The erasure facts themselves stay in clear.
	_, err = s.Append(ctx, meta, nil, []events.New{ev(a, events.TraceErased, events.TraceErasedV1{TraceID: a})})
	require.NoError(t, err)

	var tomb int
	require.NoError(t, s.Pool().QueryRow(ctx, "SELECT count(*) FROM data_keys WHERE scope = $1 AND wrapped IS NULL AND destroyed_at IS NOT NULL", a).Scan(&tomb))
	require.Equal(t, 1, tomb)
}

// A stream written before encryption (in clear) stays readable by a store
// that seals.
func TestPlaintextEventsStayReadable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, ring, _ := newSealingStore(t)
	plain := eventstore.New(s.Pool(), s.Blobs())
	a := "trace/" + uuid.NewString()
	_, err := plain.Append(ctx, eventstore.Meta{Actor: "system"}, nil, []events.New{ev(a, events.TraceImported, map[string]string{"text": "old"})})
	require.NoError(t, err)
	_, err = s.Append(ctx, eventstore.Meta{Actor: "system"}, nil, []events.New{ev(a, events.AnnotationAdded, map[string]string{"text": "new"})})
	require.NoError(t, err)
	loaded, err := s.LoadStreams(ctx, []string{a})
	require.NoError(t, err)
	require.JSONEq(t, `{"text":"old"}`, string(loaded[a][0].Payload))
	require.JSONEq(t, `{"text":"new"}`, string(loaded[a][1].Payload))
	require.NotNil(t, ring)
}

// An account's own streams (a reward model, guidelines, member names) are
// sealed with the account's key, auth's streams stay in clear, and
// EraseAccountKey makes them read as erased — another account untouched.
func TestAccountPayloadsAreSealedAndShredded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, ring, dir := newSealingStore(t)
	meta := eventstore.Meta{Actor: "system"}
	ownerA, ownerB := uuid.NewString(), uuid.NewString()
	at := func(owner, stream, text string) events.New {
		e := ev(stream, "x.v1", map[string]string{"text": text})
		e.OwnerID = owner
		return e
	}
	noise := make([]byte, eventstore.MaxInlinePayload/2)
	_, _ = rand.Read(noise)
	envs, err := s.Append(ctx, meta, nil, []events.New{
		at(ownerA, "reward_model/"+uuid.NewString(), "ACCT-A model"),
		at(ownerA, events.GuidelinesStream(ownerA), "ACCT-A ACCT-A "+hex.EncodeToString(noise)),
		at(ownerA, events.MembersStream(ownerA), "ACCT-A member"),
		at(ownerA, events.UserNameStream("alice"), "auth-clear"),
		at(ownerB, "gepa_run/"+uuid.NewString(), "ACCT-B skill"),
	})
	require.NoError(t, err)
	var dump string
	require.NoError(t, s.Pool().QueryRow(ctx, "SELECT string_agg(payload::text, ' ') FROM events").Scan(&dump))
	require.NotContains(t, dump, "ACCT-", "account payloads are sealed in the row")
	require.Contains(t, dump, "auth-clear", "auth's streams stay in clear")
	require.Contains(t, dump, `"account/`+ownerA+`"`, "sealed with the account's key")

	require.NoError(t, s.EraseAccountKey(ctx, ownerA))
	raw, err := s.ReadAfter(ctx, 0, 10)
	require.NoError(t, err)
	var erased *events.ErasedError
	for i := range 3 {
		_, err = eventstore.Resolve(ctx, s.Blobs(), ring, raw[i])
		require.ErrorAs(t, err, &erased, "event %d", i)
	}
	exists, err := s.Blobs().Exists(ctx, "events/"+envs[1].ID+".json")
	require.NoError(t, err)
	require.False(t, exists, "the claim-checked blob is deleted")
	noMarker(t, dir, "ACCT-A")
	opened, err := eventstore.Resolve(ctx, s.Blobs(), ring, raw[4])
	require.NoError(t, err)
	require.Contains(t, string(opened.Payload), "ACCT-B skill")
	_, err = s.Append(ctx, meta, nil, []events.New{at(ownerA, events.MembersStream(ownerA), "again")})
	require.ErrorAs(t, err, &erased, "nothing new is written under an erased account's key")

	// An account stream written before account sealing (in clear) still
	// reads, and the events after it are sealed.
	plain := eventstore.New(s.Pool(), s.Blobs())
	stream := events.GuidelinesStream(ownerB)
	_, err = plain.Append(ctx, meta, nil, []events.New{at(ownerB, stream, "old clear")})
	require.NoError(t, err)
	_, err = s.Append(ctx, meta, nil, []events.New{at(ownerB, stream, "new sealed")})
	require.NoError(t, err)
	loaded, err := s.LoadStreams(ctx, []string{stream})
	require.NoError(t, err)
	require.JSONEq(t, `{"text":"old clear"}`, string(loaded[stream][0].Payload))
	require.JSONEq(t, `{"text":"new sealed"}`, string(loaded[stream][1].Payload))
}

// A finding on a reward model's stream quotes its trace: it is sealed with
// the trace's key, so erasing the trace leaves it readable only redacted
// (marked erased, no quote), and erasing the account leaves nothing.
func TestTraceQuoteIsRedactedWithItsTrace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, ring, _ := newSealingStore(t)
	owner, traceID := uuid.NewString(), uuid.NewString()
	quote := "QUOTE-of-the-trace"
	e := ev(events.RewardModelStream(uuid.NewString()), events.RewardModelFindingRecorded, events.RewardModelFindingRecordedV1{
		ModelID: "m", Attempt: 1, TraceID: traceID, Finding: events.Finding{ID: "f1", TraceID: traceID, Label: "negative", Outcome: events.OutcomePair,
			EvidenceQuote: &quote, OriginalAction: "QUOTE action", Reason: "QUOTE reason"}})
	e.OwnerID = owner
	_, err := s.Append(ctx, eventstore.Meta{Actor: "system"}, nil, []events.New{e})
	require.NoError(t, err)
	raw, err := s.ReadAfter(ctx, 0, 10)
	require.NoError(t, err)
	require.NotContains(t, string(raw[0].Payload), "QUOTE")
	require.Contains(t, string(raw[0].Payload), `"trace/`+traceID+`"`, "sealed with the quoted trace's key")
	require.Contains(t, string(raw[0].Payload), `"account/`+owner+`"`, "its redacted form with the account's")

	read := func() (events.RewardModelFindingRecordedV1, error) {
		var p events.RewardModelFindingRecordedV1
		opened, err := eventstore.Resolve(ctx, s.Blobs(), ring, raw[0])
		if err != nil {
			return p, err
		}
		return p, opened.Decode(&p)
	}
	p, err := read()
	require.NoError(t, err)
	require.Equal(t, quote, *p.Finding.EvidenceQuote)
	require.False(t, p.Finding.Erased)

	require.NoError(t, s.EraseStream(ctx, events.TraceStream(traceID)))
	p, err = read()
	require.NoError(t, err, "the finding still reads, redacted")
	require.True(t, p.Finding.Erased)
	require.Nil(t, p.Finding.EvidenceQuote)
	require.Empty(t, p.Finding.OriginalAction+p.Finding.Reason)
	require.Equal(t, "f1", p.Finding.ID)
	require.Equal(t, events.OutcomePair, p.Finding.Outcome)

	// A finding reported after its trace was erased is stored redacted.
	late := e
	late.ID = uuid.NewString()
	_, err = s.Append(ctx, eventstore.Meta{Actor: "system"}, nil, []events.New{late})
	require.NoError(t, err)
	loaded, err := s.LoadStreams(ctx, []string{e.Stream})
	require.NoError(t, err)
	require.Len(t, loaded[e.Stream], 2)
	require.NotContains(t, string(loaded[e.Stream][1].Payload), "QUOTE")

	require.NoError(t, s.EraseAccountKey(ctx, owner))
	_, err = read()
	var erased *events.ErasedError
	require.ErrorAs(t, err, &erased, "the account's erasure takes the redacted form too")
}

// A key destroyed by another process stops opening here once this process
// reads the erasure's event, though this process had the key cached: the
// distributed deployment's API instances each keep their own cache.
func TestAnotherProcessForgetsAnErasedKeyOnItsEvent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, _, master := newSealingStoreMaster(t)
	other, err := keyring.New(s.Pool(), master) // a second process's ring
	require.NoError(t, err)
	meta := eventstore.Meta{Actor: "system"}
	a, b := "trace/"+uuid.NewString(), "trace/"+uuid.NewString()
	_, err = s.Append(ctx, meta, nil, []events.New{
		ev(a, events.TraceImported, map[string]string{"text": "MARKER-A"}),
		ev(b, events.TraceImported, map[string]string{"text": "MARKER-B"}),
	})
	require.NoError(t, err)
	raw, err := s.ReadAfter(ctx, 0, 10)
	require.NoError(t, err)
	_, err = eventstore.Resolve(ctx, s.Blobs(), other, raw[0]) // cached there now
	require.NoError(t, err)

	// The first process erases a: its events, then its key.
	_, err = s.Append(ctx, meta, nil, []events.New{ev(a, events.TraceErased, map[string]string{"trace_id": a})})
	require.NoError(t, err)
	require.NoError(t, s.EraseStream(ctx, a))
	_, err = eventstore.Resolve(ctx, s.Blobs(), other, raw[0])
	require.NoError(t, err, "the second process's cached key still opens, until it reads the erasure")

	all, err := s.ReadAfter(ctx, 0, 10)
	require.NoError(t, err)
	_, err = eventstore.Resolve(ctx, s.Blobs(), other, all[2]) // trace.erased, in clear
	require.NoError(t, err)
	var erased *events.ErasedError
	_, err = eventstore.Resolve(ctx, s.Blobs(), other, raw[0])
	require.ErrorAs(t, err, &erased)
	opened, err := eventstore.Resolve(ctx, s.Blobs(), other, raw[1])
	require.NoError(t, err)
	require.Contains(t, string(opened.Payload), "MARKER-B", "another trace still opens")
}
