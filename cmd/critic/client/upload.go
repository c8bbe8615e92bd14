package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/criticml/critic/domain"
)

// Failure is why one input did not go through, located where the server
// (or the local parse) said: Line is the input's own line number.
type Failure struct {
	Line    int
	Field   string
	Code    string // the server's error code, e.g. trace_sync_error
	Message string
}

func (f *Failure) Error() string {
	msg := f.Message
	if f.Field != "" {
		msg = "field " + f.Field + ": " + msg
	}
	if f.Line > 0 {
		msg = fmt.Sprintf("line %d: %s", f.Line, msg)
	}
	return msg
}

// FailureOf turns a local or server error into a Failure (nil stays nil);
// chunk maps a server-reported line back to the input.
func FailureOf(err error, chunk *Chunk) *Failure {
	if err == nil {
		return nil
	}
	var f *Failure
	if ae, ok := errors.AsType[*APIError](err); ok {
		f = &Failure{Line: ae.Line, Field: ae.Field, Code: ae.Code, Message: ae.Message()}
	} else if ve, ok := errors.AsType[*domain.ValidationError](err); ok {
		f = &Failure{Line: ve.Line, Field: ve.Field, Code: ve.Code, Message: ve.Message}
	} else {
		return &Failure{Message: err.Error()}
	}
	if chunk != nil {
		f.Line = chunk.InputLine(f.Line)
	}
	return f
}

// Result is what one input's upload did.
type Result struct {
	Format    string
	Traces    int // distinct traces the server answered with
	TraceIDs  []string
	Unchanged int // of which the server left unchanged
	// AnnotationsRemoved is how many step annotations the server removed
	// because their steps changed (kept steps keep theirs).
	AnnotationsRemoved int
	// Erased are the traces the server left out as erased before.
	Erased   []string
	Requests int
	Sent     int64 // input bytes sent
}

// Uploader sends inputs, each cut into requests under MaxRequest bytes.
type Uploader struct {
	Client     *Client
	Path       string // ImportPath or TranscriptsPath
	MaxRequest int
	// OnChunk, when set, is told after every successful request.
	OnChunk func(bytes int64, traces int)
}

// minRequest is the smallest limit a 413 answer makes the uploader retry
// with.
const minRequest = 64 << 10

// Upload sends one input of a resolved format. Requests go one after the
// other, so the first failure stops the input: what came before it is on
// the server (re-running is safe: traces with ids are updated, not
// duplicated) and the failure names the input's own line.
func (u *Uploader) Upload(ctx context.Context, format string, data []byte, sourceID string) (Result, *Failure) {
	res := Result{Format: format}
	limit := u.MaxRequest
	if limit <= 0 {
		limit = DefaultMaxRequest
	}
	chunks, err := Split(format, data, sourceID, limit)
	if err != nil {
		return res, FailureOf(err, nil)
	}
	seen := map[string]bool{}
	for i := 0; i < len(chunks); i++ {
		c := chunks[i]
		body := EncodeImport(format, c.Data, sourceID)
		out, err := u.Client.Post(ctx, u.Path, body)
		if ae, ok := errors.AsType[*APIError](err); ok && ae.Status == http.StatusRequestEntityTooLarge && limit/2 >= minRequest {
			// The server's limit is lower than ours: cut this chunk finer.
			limit /= 2
			sub, serr := Split(format, c.Data, sourceID, limit)
			if serr == nil {
				for j := range sub {
					sub[j].Lines = remap(sub[j].Lines, c.Lines)
				}
				chunks = append(chunks[:i], append(sub, chunks[i+1:]...)...)
				i--
				continue
			}
		}
		if err != nil {
			return res, FailureOf(err, &c)
		}
		res.Requests++
		res.Sent += c.Bytes
		newTraces := 0
		for _, id := range out.TraceIDs {
			if !seen[id] {
				seen[id] = true
				newTraces++
				res.TraceIDs = append(res.TraceIDs, id)
			}
		}
		res.Traces += newTraces
		for _, id := range out.Erased {
			if !seen[id] {
				seen[id] = true
				res.Erased = append(res.Erased, id)
			}
		}
		res.Unchanged += out.Unchanged
		res.AnnotationsRemoved += out.AnnotationsRemoved
		if u.OnChunk != nil {
			u.OnChunk(c.Bytes, newTraces)
		}
	}
	res.Unchanged = min(res.Unchanged, res.Traces)
	return res, nil
}

// remap composes line maps: sub's lines are numbered within a chunk whose
// own lines map to the input through outer.
func remap(sub, outer []int) []int {
	if outer == nil {
		return sub
	}
	if sub == nil {
		return outer
	}
	out := make([]int, len(sub))
	for i, l := range sub {
		if l-1 < len(outer) {
			out[i] = outer[l-1]
		} else {
			out[i] = l
		}
	}
	return out
}
