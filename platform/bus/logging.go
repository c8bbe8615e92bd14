package bus

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill"
)

// busLog is where the bus's own lines and kafka-go's go, at the level each
// deserves. kafka-go reports everything through one error logger: the
// consumer-group protocol's normal churn (a member joining while a
// rebalance is in progress, a generation that ended) and a loaded machine's
// network hiccups (i/o timeout, connection reset) look like errors there,
// and an operator who sees hundreds of ERROR lines for what is routine
// stops reading the log. So: protocol churn is DEBUG, transient network
// errors are WARN at most once per transientEvery (with how many were held
// back), and only the rest stays ERROR.
type busLog struct {
	slog  *slog.Logger            // Config.Logger; nil: wm
	wm    watermill.LoggerAdapter // the caller's watermill logger
	attrs []any

	mu          sync.Mutex
	nextWarn    time.Time
	heldBack    int
	assigned    []int // partitions this reader holds (partition logging)
	hasAssigned bool
}

// transientEvery bounds how often transient broker errors are logged.
const transientEvery = 10 * time.Second

func newBusLog(cfg Config, wm watermill.LoggerAdapter, attrs ...any) *busLog {
	if wm == nil {
		wm = watermill.NopLogger{}
	}
	return &busLog{slog: cfg.Logger, wm: wm, attrs: attrs}
}

func (l *busLog) log(level slog.Level, msg string, err error, args ...any) {
	// watermill's Error takes the error apart from the fields.
	if err != nil && (l.slog != nil || level < slog.LevelError) {
		args = append(args, "err", err)
	}
	all := append(slices.Clone(l.attrs), args...)
	if l.slog != nil {
		l.slog.Log(context.Background(), level, msg, all...)
		return
	}
	f := watermill.LogFields{}
	for i := 0; i+1 < len(all); i += 2 {
		f[fmt.Sprint(all[i])] = all[i+1]
	}
	switch {
	case level >= slog.LevelError:
		l.wm.Error(msg, err, f)
	case level >= slog.LevelInfo: // watermill has no WARN
		l.wm.Info(msg, f)
	default:
		l.wm.Debug(msg, f)
	}
}

// problem logs err at the level its kind deserves (see busLog).
func (l *busLog) problem(msg string, err error, args ...any) {
	switch classify(err.Error()) {
	case churn:
		l.log(slog.LevelDebug, msg, err, args...)
	case transient:
		l.mu.Lock()
		now := time.Now()
		if now.Before(l.nextWarn) {
			l.heldBack++
			l.mu.Unlock()
			l.log(slog.LevelDebug, msg, err, args...)
			return
		}
		l.nextWarn = now.Add(transientEvery)
		held := l.heldBack
		l.heldBack = 0
		l.mu.Unlock()
		l.log(slog.LevelWarn, msg+" (transient; the client retries)", err, append(args, "similar_since_last", held)...)
	default:
		l.log(slog.LevelError, msg, err, args...)
	}
}

type errKind int

const (
	other errKind = iota
	churn
	transient
)

// churnMarks are the consumer-group protocol's routine answers during a
// rebalance, and the dials a reader cancels itself when it stops (a
// rebalance or a shutdown); transientMarks are network or broker hiccups a retry outlives.
var (
	churnMarks = []string{"Rebalance In Progress", "Unknown Member", "Illegal Generation", "Not Coordinator",
		"Coordinator Not Available", "Coordinator Load In Progress", "Group Coordinator Not Available", "Leader Not Available",
		"Not Leader For Partition", "Not Leader Or Follower", "operation was canceled", "context canceled"}
	transientMarks = []string{"i/o timeout", "connection refused", "connection reset", "broken pipe", "EOF",
		"context deadline exceeded", "use of closed network connection", "no such host", "Request Timed Out", "network is unreachable"}
)

func classify(msg string) errKind {
	in := func(m string) bool { return strings.Contains(msg, m) }
	switch {
	case slices.ContainsFunc(churnMarks, in):
		return churn
	case slices.ContainsFunc(transientMarks, in):
		return transient
	}
	return other
}

// kafkaLogger adapts busLog to kafka-go's Logger (chatter) and ErrorLogger.
type kafkaLogger struct {
	l     *busLog
	error bool
}

func (k kafkaLogger) Printf(format string, args ...any) {
	if k.error {
		k.l.problem("kafka-go", fmt.Errorf(format, args...))
		return
	}
	if strings.HasPrefix(format, "subscribed to topics and partitions") && len(args) == 1 {
		k.l.assignment(partitionsOf(args[0]))
		return
	}
	k.l.log(slog.LevelDebug-4, fmt.Sprintf(format, args...), nil)
}

// assignment logs once per change which partitions this member gained and
// lost: where a projection's work moved when an instance joined, stopped or
// crashed.
func (l *busLog) assignment(now []int) {
	slices.Sort(now)
	l.mu.Lock()
	prev, had := l.assigned, l.hasAssigned
	l.assigned, l.hasAssigned = now, true
	l.mu.Unlock()
	if had && slices.Equal(prev, now) {
		return
	}
	l.log(slog.LevelInfo, "consumer group partitions moved", nil, "holds", fmt.Sprint(now), "assigned", fmt.Sprint(without(now, prev)), "revoked", fmt.Sprint(without(prev, now)))
}

// without is the partitions of a that are not in b.
func without(a, b []int) []int {
	return slices.DeleteFunc(slices.Clone(a), func(p int) bool { return slices.Contains(b, p) })
}

// revokeAll logs that this member gave up its partitions (its reader
// closed).
func (l *busLog) revokeAll() {
	l.mu.Lock()
	prev := l.assigned
	l.assigned, l.hasAssigned = nil, false
	l.mu.Unlock()
	if len(prev) > 0 {
		l.log(slog.LevelInfo, "consumer group partitions moved", nil, "holds", "[]", "assigned", "[]", "revoked", fmt.Sprint(prev))
	}
}

// partitionsOf reads the partition numbers out of kafka-go's
// map[topicPartition]int64 (an unexported key type: read by reflection).
func partitionsOf(v any) []int {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Map {
		return nil
	}
	var out []int
	for _, k := range rv.MapKeys() {
		if k.Kind() != reflect.Struct {
			continue
		}
		if f := k.FieldByName("partition"); f.IsValid() && f.CanInt() {
			out = append(out, int(f.Int()))
		}
	}
	return out
}
