package dispatch_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/platform/eventstore"
	"github.com/criticml/critic/platform/pg/pgtest"
	"github.com/criticml/critic/platform/relay"
	"github.com/criticml/critic/projections"
	"github.com/criticml/critic/projections/dispatch"
)

// downBroker refuses the first down publishes the way a Kafka client does
// when the broker is unreachable, then records like recorder.
type downBroker struct {
	recorder
	mu   sync.Mutex
	down int
}

func (b *downBroker) Publish(topic string, msgs ...*message.Message) error {
	b.mu.Lock()
	if b.down > 0 {
		b.down--
		b.mu.Unlock()
		return &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	b.mu.Unlock()
	return b.recorder.Publish(topic, msgs...)
}

// TestABrokerOutageParksNothing: the dispatcher cannot publish for longer
// than its guard's retries (the broker is down). The batch fails and is
// redelivered, as the bus does; nothing is parked and no account is held,
// so once the broker is back every job is published — the account's later
// imports included. (Parking it held the account's events until an
// operator acted: in the chaos test, an account's models stayed queued.)
func TestABrokerOutageParksNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	blobs, err := blob.NewLocal(t.TempDir())
	require.NoError(t, err)
	store := eventstore.New(pool, blobs)
	cmds := commands.New(store)
	u, err := cmds.CreateUser.Handle(ctx, commands.CreateUser{Name: "outage"})
	require.NoError(t, err)
	for _, ext := range []string{"first", "second"} {
		_, err := cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: commands.Actor{UserID: u.UserID}, Input: commands.ImportTracesInput{Format: "stash",
			Data: []byte(`{"id":"` + ext + `","steps":[{"role":"user","content":"refund ` + ext + `"}]}`)}})
		require.NoError(t, err)
	}
	all, err := store.ReadAfter(ctx, 0, 1000)
	require.NoError(t, err)
	var batch []*message.Message
	for _, e := range all {
		m, err := relay.Message(e)
		require.NoError(t, err)
		batch = append(batch, m)
	}

	broker := &downBroker{recorder: recorder{msgs: map[string][]*message.Message{}}, down: 6}
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	g := projections.NewGuard(dispatch.Name, pool, store, dispatch.New(cmds, store, broker, discard).WithTitles(true), discard,
		projections.GuardOptions{Tries: 2, Backoff: time.Millisecond, Poll: time.Hour})

	err = g.Handle(ctx, batch)
	require.Error(t, err, "the batch fails while the broker is down, so the bus redelivers it")
	require.Contains(t, err.Error(), "publish a job on "+jobs.TopicTitle)
	_, held := g.Held(u.UserID)
	require.False(t, held, "an outage holds no account")
	_, parked, err := projections.Status(ctx, pool)
	require.NoError(t, err)
	require.Empty(t, parked, "an outage parks nothing")

	for range 5 { // the bus's redeliveries
		if err = g.Handle(ctx, batch); err == nil {
			break
		}
	}
	require.NoError(t, err, "the broker is back")
	require.Len(t, broker.msgs[jobs.TopicTitle], 2, "both imports' title jobs, the account's later one included")
	_, parked, err = projections.Status(ctx, pool)
	require.NoError(t, err)
	require.Empty(t, parked)
}
