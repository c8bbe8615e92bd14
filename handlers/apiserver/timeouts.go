package apiserver

import (
	"net/http"
	"time"
)

// Timeouts bound how long a client may hold a connection without making
// progress, so a handful of slow or stalled clients cannot pin memory and
// connections. The zero value of each field takes the default.
type Timeouts struct {
	// ReadHeader bounds reading a request's headers (default 10 s).
	ReadHeader time.Duration
	// Read bounds reading a whole request, body included (default 5 min:
	// a 64 MiB import at ~220 KB/s). Raise it for slower uploaders.
	Read time.Duration
	// Write bounds the time a response may go without progress (default
	// 5 min): every write a handler makes extends the deadline by this
	// much, so a multi-GB checkpoint download or a large export streams
	// as long as the client keeps reading, and a client that stops reading
	// is cut off after Write.
	Write time.Duration
	// Idle bounds how long a keep-alive connection waits for its next
	// request (default 2 min).
	Idle time.Duration
}

func (t Timeouts) withDefaults() Timeouts {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&t.ReadHeader, 10*time.Second)
	def(&t.Read, 5*time.Minute)
	def(&t.Write, 5*time.Minute)
	def(&t.Idle, 2*time.Minute)
	return t
}

// extendWrites makes the server's write timeout a timeout on progress: each
// write moves the connection's write deadline to now+d (at most every d/4,
// capped at a second, to keep the cost of a deadline update off small
// writes while never letting the deadline fall below 3d/4 ahead of the
// last write).
func extendWrites(next http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&progressWriter{ResponseWriter: w, rc: http.NewResponseController(w), d: d, every: min(d/4, time.Second)}, r)
	})
}

type progressWriter struct {
	http.ResponseWriter
	rc    *http.ResponseController
	d     time.Duration
	every time.Duration
	last  time.Time
}

func (p *progressWriter) extend() {
	if now := time.Now(); now.Sub(p.last) >= p.every {
		p.last = now
		_ = p.rc.SetWriteDeadline(now.Add(p.d))
	}
}

func (p *progressWriter) Write(b []byte) (int, error) {
	p.extend()
	return p.ResponseWriter.Write(b)
}

// Flush keeps streaming responses (Connect server streams, exports)
// flushing through the wrapper.
func (p *progressWriter) Flush() {
	p.extend()
	_ = p.rc.Flush()
}

// Unwrap lets http.ResponseController reach the connection underneath.
func (p *progressWriter) Unwrap() http.ResponseWriter { return p.ResponseWriter }
