package commands

import (
	"context"
	"sync"
	"time"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/formats"
	"github.com/criticml/critic/domain/traces"
)

// liveIdle is how long the live receiver keeps a conversation nobody
// exports to (liveConversations): a live run exports every few seconds, so
// only the runs in progress are kept.
const liveIdle = 5 * time.Minute

// liveMemoryPerByte estimates what a kept conversation holds in memory per
// byte of its records' JSON: the folded stream (the records and each span's
// input and output) and the records decoded with each call's messages
// measured 4.4× the JSON for a 300-call run.
const liveMemoryPerByte = 4

// DefaultOTLPCache is WithOTLPCache's default: 512 MiB, a few hundred
// long runs' worth (a 300-call run whose calls re-send a conversation of up
// to 211 KiB holds 31 MiB of JSON).
const DefaultOTLPCache = 512 << 20

// WithOTLPCache bounds what the live OTLP receiver keeps between exports
// (bytes of memory, estimated; CRITIC_OTLP_CACHE_MEMORY): past it the
// least recently exported conversations go first; 0 keeps nothing, and
// every export folds its conversation's stream and decodes its records
// afresh.
func WithOTLPCache(bytes int64) Option {
	return func(c *config) { c.otlpCache = bytes }
}

// liveConversations keeps, per trace stream the live OTLP receiver wrote
// lately, the trace folded as of its last version and its records' SpanMemo.
// An export then reads only the events appended since (by any process) and
// decodes only the records it has not seen, instead of folding the whole
// stream and rebuilding every call the run made on each export, which made
// a long run's exports slower with every call. The log stays the truth:
// every use reads the stream's tail, and a tail that does not continue the
// kept version exactly (an erased event passed over) or that deletes the
// trace sends the reader back to the whole stream.
//
// A conversation's first export in the process keeps only a mark that it
// was seen; its second keeps it whole. A live run exports again within
// seconds, while an import of finished traces (a batch per run, or a
// backfill) exports each once: keeping those would only fill memory and
// lengthen every garbage collection for nothing.
//
// An entry is taken out while a request uses it, under the stream's lock
// (streamLocks), and put back after, so no two requests share one.
type liveConversations struct {
	budget int64 // WithOTLPCache
	mu     sync.Mutex
	m      map[string]*liveConversation
	size   int64
	timer  *time.Timer
}

// liveConversation is one kept stream: its state and memo, or only the
// mark that it was exported once (memo nil).
type liveConversation struct {
	st   traces.State
	memo *formats.SpanMemo
	size int64
	used time.Time
}

// markSize is what a mark counts against the budget.
const markSize = 256

// take removes and returns the stream's entry (nil when none is kept);
// again says whether it was exported lately, kept whole or as a mark.
func (l *liveConversations) take(stream string) (lc *liveConversation, again bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lc = l.m[stream]
	if lc == nil {
		return nil, false
	}
	delete(l.m, stream)
	l.size -= lc.size
	if time.Since(lc.used) > liveIdle {
		return nil, false
	}
	if lc.memo == nil {
		return nil, true
	}
	return lc, true
}

// put keeps the stream's entry — whole when the stream was exported before
// this request (again, as take said), else only a mark, so its next export
// keeps it; past the budget it drops idle entries, then the least recently
// used (expire drops idle ones meanwhile).
func (l *liveConversations) put(stream string, lc *liveConversation, again bool) {
	if l.budget <= 0 {
		return
	}
	if !again {
		lc = &liveConversation{size: markSize}
	} else {
		lc.size = int64(lc.memo.Size())*liveMemoryPerByte + markSize
	}
	lc.used = time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]*liveConversation{}
	}
	if old := l.m[stream]; old != nil {
		l.size -= old.size
	}
	l.m[stream] = lc
	l.size += lc.size
	if l.size > l.budget {
		l.evict(time.Now())
	}
	if l.timer == nil {
		l.timer = time.AfterFunc(liveIdle, l.expire)
	}
}

// forgetLive drops what the live receiver keeps of an erased trace's stream,
// after any export holding it has put it back (the stream's lock).
func (c *Streams) forgetLive(stream string) {
	unlock := c.locks.lock([]string{stream})
	defer unlock()
	c.live.forget(stream)
}

// forget drops the stream's entry: the trace was erased.
func (l *liveConversations) forget(stream string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if lc := l.m[stream]; lc != nil {
		delete(l.m, stream)
		l.size -= lc.size
	}
}

// expire runs while entries are kept, so an idle one leaves memory within
// about twice liveIdle even with no export after it.
func (l *liveConversations) expire() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evict(time.Now())
	if len(l.m) == 0 {
		l.timer = nil
		return
	}
	l.timer.Reset(liveIdle)
}

func (l *liveConversations) evict(now time.Time) {
	for stream, lc := range l.m {
		if now.Sub(lc.used) > liveIdle {
			delete(l.m, stream)
			l.size -= lc.size
		}
	}
	for l.size > l.budget && len(l.m) > 0 {
		var oldest string
		for stream, lc := range l.m {
			if oldest == "" || lc.used.Before(l.m[oldest].used) {
				oldest = stream
			}
		}
		l.size -= l.m[oldest].size
		delete(l.m, oldest)
	}
}

// liveTails reads what each of streams holds past what is kept of it: for
// a stream in known, the events after its version; for any other, or one
// whose tail does not continue it (then dropped from known), every event.
func (c *Streams) liveTails(ctx context.Context, streams []string, known map[string]*liveConversation) (map[string][]events.Envelope, error) {
	after := map[string]int64{}
	for _, s := range streams {
		if lc := known[s]; lc != nil {
			after[s] = lc.st.Version
		}
	}
	tails, err := c.store.LoadStreamsAfter(ctx, streams, after)
	if err != nil {
		return nil, err
	}
	var whole []string
	for s, v := range after {
		if !continues(v, tails[s]) {
			delete(known, s)
			whole = append(whole, s)
		}
	}
	if len(whole) == 0 {
		return tails, nil
	}
	all, err := c.store.LoadStreams(ctx, whole)
	if err != nil {
		return nil, err
	}
	for _, s := range whole {
		tails[s] = all[s]
	}
	return tails, nil
}

// advance brings the stream's kept entry (a new one for traceID when none
// is kept) to its head with tail.
func advance(known map[string]*liveConversation, stream, traceID string, tail []events.Envelope) (*liveConversation, error) {
	lc := known[stream]
	if lc == nil {
		lc = &liveConversation{st: traces.State{ID: traceID}, memo: formats.NewSpanMemo()}
		known[stream] = lc
	}
	for _, e := range tail {
		if err := lc.st.Apply(e); err != nil {
			delete(known, stream)
			return nil, err
		}
	}
	return lc, nil
}

// continues says whether evs are exactly the events after version v and
// leave the trace's content in place: no gap (an event erased since it was
// kept, passed over by the store) and no deletion, after which a fold of the
// whole stream is what holds.
func continues(v int64, evs []events.Envelope) bool {
	for i, e := range evs {
		if e.Version != v+int64(i)+1 || e.Type == events.TraceDeleted || e.Type == events.TraceErased {
			return false
		}
	}
	return true
}
