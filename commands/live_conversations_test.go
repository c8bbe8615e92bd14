package commands

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain/formats"
)

// TestLiveConversationsBounds: a conversation's first export leaves only a
// mark and its second keeps it whole; what is kept stays within the budget
// (the least recently exported out first), an idle conversation is not
// handed out again, an erased one is forgotten, and a zero budget keeps
// nothing.
func TestLiveConversationsBounds(t *testing.T) {
	kept := func(l *liveConversations, stream string) bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.m[stream] != nil && l.m[stream].memo != nil
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
	l := &liveConversations{budget: 250*liveMemoryPerByte + 3*markSize}

	l.put("a", entry(), false)
	require.False(t, kept(l, "a"), "a first export leaves a mark")
	lc, again := l.take("a")
	require.Nil(t, lc)
	require.True(t, again, "the mark says it was exported")
	l.put("a", entry(), again)
	require.True(t, kept(l, "a"), "its second export keeps it")

	l.put("b", entry(), true)
	require.True(t, kept(l, "b"))
	l.put("c", entry(), true) // 300 bytes of JSON: a, the oldest, goes
	require.False(t, kept(l, "a"))
	require.True(t, kept(l, "b") && kept(l, "c"))
	require.Equal(t, int64(200*liveMemoryPerByte+2*markSize), l.size)

	b, _ := l.take("b")
	require.NotNil(t, b, "taken while an export uses it")
	require.False(t, kept(l, "b"))
	l.put("b", b, true)

	l.m["c"].used = time.Now().Add(-2 * liveIdle)
	c, again := l.take("c")
	require.Nil(t, c, "idle past liveIdle: folded again from the log")
	require.False(t, again)
	require.False(t, kept(l, "c"))

	l.forget("b")
	require.False(t, kept(l, "b"))
	require.Zero(t, l.size)

	off := &liveConversations{}
	off.put("a", entry(), true)
	require.False(t, kept(off, "a"))
}
