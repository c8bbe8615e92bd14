package edge

import (
	"cmp"
	"compress/gzip"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
)

// compressMin is the smallest body worth compressing: below it gzip's
// framing costs more than it saves.
const compressMin = 1024

// Compress gzips the JSON, JSONL, text and script answers of clients that
// accept it. A trace's detail carries every span's input and output, and
// a live agent's every LLM span re-sends the conversation so far, so the
// detail of a long run is tens of megabytes of JSON that compresses about
// tenfold; the web app's scripts are the other large answers. It never
// touches Connect and gRPC (they negotiate their own compression), bodies
// the handler already encoded or sized as a range, other media types (blob
// downloads, zips), or bodies under compressMin. Writes are compressed as
// they come, and Flush flushes the compressor first, so streamed answers
// stay streamed.
func Compress(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !acceptsGzip(r.Header.Get("Accept-Encoding")) || r.Method == http.MethodHead || rpcRequest(r) {
			next.ServeHTTP(w, r)
			return
		}
		cw := &compressWriter{ResponseWriter: w}
		defer cw.close()
		next.ServeHTTP(cw, r)
	})
}

// acceptsGzip reads Accept-Encoding: gzip listed without q=0.
func acceptsGzip(header string) bool {
	for part := range strings.SplitSeq(header, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
			continue
		}
		q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}

// rpcRequest is a Connect or gRPC call, which carries its own compression.
func rpcRequest(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	return strings.HasPrefix(ct, "application/grpc") || strings.HasPrefix(ct, "application/connect") ||
		r.Header.Get("Connect-Protocol-Version") != ""
}

// compressible says whether a response of this Content-Type is text.
func compressible(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	switch {
	case strings.HasPrefix(mt, "text/"), mt == "application/json", mt == "application/problem+json",
		mt == "application/x-ndjson", mt == "application/jsonl", mt == "application/javascript",
		mt == "image/svg+xml", mt == "application/manifest+json":
		return true
	}
	return false
}

var gzipWriters = sync.Pool{New: func() any {
	gz, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return gz
}}

// compressWriter holds the first compressMin bytes until it knows whether
// the body is worth compressing, then writes through gz or as it is.
type compressWriter struct {
	http.ResponseWriter
	status  int
	buf     []byte
	decided bool
	gz      *gzip.Writer
}

func (c *compressWriter) WriteHeader(code int) {
	c.status = cmp.Or(c.status, code)
	if code < 200 && code != http.StatusSwitchingProtocols {
		c.ResponseWriter.WriteHeader(code) // informational: not the answer's head
	}
}

func (c *compressWriter) Write(b []byte) (int, error) {
	c.status = cmp.Or(c.status, http.StatusOK)
	if !c.decided {
		if len(c.buf)+len(b) < compressMin {
			c.buf = append(c.buf, b...)
			return len(b), nil
		}
		if err := c.decide(true); err != nil {
			return 0, err
		}
	}
	if c.gz != nil {
		return c.gz.Write(b)
	}
	return c.ResponseWriter.Write(b)
}

// decide sends the head, compressed when big is set and the answer is a
// compressible one that the handler did not encode itself, then what was
// held back.
func (c *compressWriter) decide(big bool) error {
	c.decided = true
	h := c.Header()
	c.status = cmp.Or(c.status, http.StatusOK)
	if big && c.status != http.StatusNoContent && c.status != http.StatusNotModified && c.status != http.StatusPartialContent &&
		h.Get("Content-Encoding") == "" && h.Get("Content-Range") == "" && compressible(h.Get("Content-Type")) {
		h.Set("Content-Encoding", "gzip")
		h.Del("Content-Length")
		h.Add("Vary", "Accept-Encoding")
		c.gz = gzipWriters.Get().(*gzip.Writer)
		c.gz.Reset(c.ResponseWriter)
	}
	c.ResponseWriter.WriteHeader(c.status)
	held := c.buf
	c.buf = nil
	if len(held) == 0 {
		return nil
	}
	var out io.Writer = c.ResponseWriter
	if c.gz != nil {
		out = c.gz
	}
	_, err := out.Write(held)
	return err
}

// Flush sends what was written so far: a streamed answer is compressed
// from its first flush whatever its size so far.
func (c *compressWriter) Flush() {
	if !c.decided {
		_ = c.decide(true)
	}
	if c.gz != nil {
		_ = c.gz.Flush()
	}
	_ = http.NewResponseController(c.ResponseWriter).Flush()
}

// close ends the answer: a small one goes out as it is.
func (c *compressWriter) close() {
	if !c.decided {
		if c.status == 0 && len(c.buf) == 0 {
			return // the handler wrote nothing: net/http answers 200 itself
		}
		_ = c.decide(false)
	}
	if c.gz != nil {
		_ = c.gz.Close()
		c.gz.Reset(nil)
		gzipWriters.Put(c.gz)
		c.gz = nil
	}
}

// Unwrap lets http.ResponseController reach the connection underneath.
func (c *compressWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }
