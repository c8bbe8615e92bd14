package bus

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPing: a live broker answers; once it is closed, Ping says which
// address failed, within the caller's deadline.
func TestPing(t *testing.T) {
	t.Parallel()
	b, err := StartEmbedded(context.Background(), EmbeddedConfig{})
	require.NoError(t, err)
	addrs := b.Addrs()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, Ping(ctx, addrs))

	// A dead first address does not hide a live second one.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := l.Addr().String()
	require.NoError(t, l.Close())
	require.NoError(t, Ping(ctx, append([]string{dead}, addrs...)))

	require.NoError(t, b.Close())
	ctx2, cancel2 := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel2()
	err = Ping(ctx2, addrs)
	require.Error(t, err)
	require.Contains(t, err.Error(), addrs[0])
	require.ErrorContains(t, Ping(ctx2, nil), "no Kafka brokers configured")
}
