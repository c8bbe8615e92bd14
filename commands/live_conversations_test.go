package commands

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/formats"
)

// TestLiveConversationsBounds: what the receiver keeps stays within its
// budget (the least recently exported out first), an idle conversation is
// not handed out again, an erased one is forgotten, and a zero budget keeps
// nothing.
func TestLiveConversationsBounds(t *testing.T) {
	kept := func(l *liveConversations, stream string) bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.m[stream] != nil
	}
	// A conversation whose one record is 100 bytes of JSON.
	entry := func() *liveConversation {
		m := formats.NewSpanMemo()
		raw := []byte(`{"resourceSpans":[]}` + strings.Repeat(" ", 80))
		_, _, err := formats.RebuildConversation([]formats.RawSpan{{SpanID: "s", JSON: raw}}, "x", nil, m)
		require.NoError(t, err)
		require.Equal(t, 100, m.Size())
		return &liveConversation{memo: m}
	}
	l := &liveConversations{budget: 250 * liveMemoryPerByte}
	l.put("a", entry())
	l.put("b", entry())
	require.True(t, kept(l, "a") && kept(l, "b"))
	l.put("c", entry()) // 300 bytes of JSON: a, the oldest, goes
	require.False(t, kept(l, "a"))
	require.True(t, kept(l, "b") && kept(l, "c"))
	require.Equal(t, int64(200*liveMemoryPerByte), l.size)

	b := l.take("b")
	require.NotNil(t, b, "taken while an export uses it")
	require.False(t, kept(l, "b"))
	l.put("b", b)

	l.m["c"].used = time.Now().Add(-2 * liveIdle)
	require.Nil(t, l.take("c"), "idle past liveIdle: folded again from the log")
	require.False(t, kept(l, "c"))

	l.forget("b")
	require.False(t, kept(l, "b"))
	require.Zero(t, l.size)

	off := &liveConversations{}
	off.put("a", entry())
	require.False(t, kept(off, "a"))
}
