package usecase

import (
	"context"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/formats"
	"github.com/criticml/critic/domain/stepscores"
	"github.com/criticml/critic/projections/readmodel"
)

// FormatInfo is one import format as the API lists it.
type FormatInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// Formats lists the import formats, "auto" last. It lives here so REST and
// Connect list the same formats in the same order.
func Formats() []FormatInfo {
	out := []FormatInfo{}
	for _, f := range formats.All() {
		out = append(out, FormatInfo{f.Name(), f.Description()})
	}
	return append(out, FormatInfo{formats.Auto{}.Name(), formats.Auto{}.Description()})
}

// ImportTraces imports a payload for the caller into sourceID (nil: none;
// empty is refused) and returns once the traces are readable.
func (b Backend) ImportTraces(ctx context.Context, caller *readmodel.Caller, in commands.ImportTracesInput, sourceID *string) (commands.ImportResult, error) {
	if sourceID != nil {
		if *sourceID == "" {
			return commands.ImportResult{}, domain.InvalidField("source_id", "source_id must be 1–200 characters")
		}
		in.SourceID = *sourceID
	}
	res, err := b.Cmds.ImportTraces.Handle(ctx, commands.ImportTraces{Actor: Actor(caller), Input: in})
	return res, b.applied(ctx, res.Result, err)
}

// DeleteTrace deletes one of the caller's traces and returns once it is gone
// from the read model.
func (b Backend) DeleteTrace(ctx context.Context, caller *readmodel.Caller, traceID string) error {
	res, err := b.Cmds.DeleteTrace.Handle(ctx, commands.DeleteTrace{Actor: Actor(caller), TraceID: traceID})
	return b.applied(ctx, res, err)
}

// ListParams are a trace list's parameters as a client sent them, before
// defaults and checks: REST reads them from the query string, Connect from
// its request message, and both get the same defaults and the same errors
// from Filter.
type ListParams struct {
	Limit, Offset *int // nil → 50 / 0
	SourceID      string
	From, To      string // inclusive import dates, YYYY-MM-DD
	TZ            string // IANA zone of From/To; "" → UTC
	Q             string // text in a title or any step's content
	Sort          string // "" (newest first), "source", "-source", or a score column (readmodel.ListSorts)
	// Outcomes keeps traces with one of these automatic outcomes.
	Outcomes []string
	// The score bounds, inclusive (nil: unbounded).
	ActionCreditMin, ActionCreditMax *float64
	TraceScoreMin, TraceScoreMax     *float64
	LatestScoreMin, LatestScoreMax   *float64
}

// listOutcomes are the values ?outcome takes: the automatic annotation's
// outcomes (spec 001 "Step scores").
var listOutcomes = []string{stepscores.OutcomeSuccess, stepscores.OutcomePartialSuccess, stepscores.OutcomeFailure, stepscores.OutcomeInsufficientEvidence}

// scoreBounds names each score bound of p as the query string does, in the
// order they are checked.
func (p *ListParams) scoreBounds() []struct {
	name string
	dst  **float64
} {
	return []struct {
		name string
		dst  **float64
	}{{"action_credit_min", &p.ActionCreditMin}, {"action_credit_max", &p.ActionCreditMax},
		{"trace_score_min", &p.TraceScoreMin}, {"trace_score_max", &p.TraceScoreMax},
		{"latest_score_min", &p.LatestScoreMin}, {"latest_score_max", &p.LatestScoreMax}}
}

// The bounds of ?limit and ?offset.
const (
	maxListLimit  = 1000
	maxListOffset = 1<<31 - 1
	maxQueryLen   = 500
)

// Filter checks p and returns the read-model filter: limit 1–1000 (default
// 50), offset ≥ 0, dates interpreted in the user's own calendar (TZ) so "to"
// includes the whole of that local day.
func (p ListParams) Filter() (readmodel.ListFilter, error) {
	f := readmodel.ListFilter{Limit: 50, SourceID: p.SourceID, Query: p.Q}
	sorts := readmodel.ListSorts()
	if !slices.Contains(sorts, readmodel.ListSort(p.Sort)) {
		names := make([]string, 0, len(sorts)-1)
		for _, s := range sorts[1:] {
			names = append(names, string(s))
		}
		return f, domain.InvalidField("sort",
			"sort must be one of "+strings.Join(names, ", ")+" (omit it for newest first)")
	}
	f.Sort = readmodel.ListSort(p.Sort)
	for _, o := range p.Outcomes {
		if !slices.Contains(listOutcomes, o) {
			return f, domain.InvalidField("outcome",
				"outcome must be one of "+strings.Join(listOutcomes, ", ")+", not "+strconv.Quote(o))
		}
	}
	f.Outcomes = p.Outcomes
	for _, b := range p.scoreBounds() {
		if v := *b.dst; v != nil && (math.IsNaN(*v) || math.IsInf(*v, 0)) {
			return f, domain.InvalidField(b.name, b.name+" must be a finite number")
		}
	}
	for _, r := range []struct {
		name     string
		min, max *float64
		dst      *readmodel.Range
	}{{"action_credit", p.ActionCreditMin, p.ActionCreditMax, &f.ActionCredit},
		{"trace_score", p.TraceScoreMin, p.TraceScoreMax, &f.TraceScore},
		{"latest_score", p.LatestScoreMin, p.LatestScoreMax, &f.LatestScore}} {
		if r.min != nil && r.max != nil && *r.min > *r.max {
			return f, domain.InvalidField(r.name+"_min",
				r.name+"_min must not be greater than "+r.name+"_max")
		}
		*r.dst = readmodel.Range{Min: r.min, Max: r.max}
	}
	if len(p.Q) > maxQueryLen {
		return f, domain.InvalidField("q", "q must be at most "+strconv.Itoa(maxQueryLen)+" characters")
	}
	if p.Limit != nil {
		if err := checkRange("limit", *p.Limit, 1, maxListLimit); err != nil {
			return f, err
		}
		f.Limit = *p.Limit
	}
	if p.Offset != nil {
		if err := checkRange("offset", *p.Offset, 0, maxListOffset); err != nil {
			return f, err
		}
		f.Offset = *p.Offset
	}
	loc := time.UTC
	if p.TZ != "" {
		l, err := time.LoadLocation(p.TZ)
		if err != nil {
			return f, domain.InvalidField("tz", "unknown time zone "+strconv.Quote(p.TZ))
		}
		loc = l
	}
	for _, d := range []struct {
		name, value string
		dst         **time.Time
		next        bool
	}{{"from", p.From, &f.From, false}, {"to", p.To, &f.To, true}} {
		if d.value == "" {
			continue
		}
		t, err := time.ParseInLocation("2006-01-02", d.value, loc)
		if err != nil {
			return f, domain.InvalidField(d.name, d.name+" must be a date YYYY-MM-DD")
		}
		if d.next { // inclusive: everything before the next day's start
			t = t.AddDate(0, 0, 1)
		}
		*d.dst = &t
	}
	return f, nil
}

// ListParamsFromQuery reads ?limit&offset&source_id&from&to&tz&q&sort, the
// repeatable ?outcome (each also a comma-separated list) and the score
// bounds (?action_credit_min … ?latest_score_max, numbers). A limit or
// offset that is not an integer gets the same error as one out of range;
// each is checked in order so the first bad parameter is the one reported.
func ListParamsFromQuery(q url.Values) (ListParams, error) {
	p := ListParams{SourceID: q.Get("source_id"), From: q.Get("from"), To: q.Get("to"), TZ: q.Get("tz"), Q: q.Get("q"), Sort: q.Get("sort")}
	for _, ip := range []struct {
		name   string
		dst    **int
		lo, hi int
	}{{"limit", &p.Limit, 1, maxListLimit}, {"offset", &p.Offset, 0, maxListOffset}} {
		v := q.Get(ip.name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return p, rangeError(ip.name, ip.lo, ip.hi)
		}
		if err := checkRange(ip.name, n, ip.lo, ip.hi); err != nil {
			return p, err
		}
		*ip.dst = &n
	}
	for _, v := range q["outcome"] {
		for o := range strings.SplitSeq(v, ",") {
			if o = strings.TrimSpace(o); o != "" {
				p.Outcomes = append(p.Outcomes, o)
			}
		}
	}
	for _, b := range p.scoreBounds() {
		v := q.Get(b.name)
		if v == "" {
			continue
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return p, domain.InvalidField(b.name, b.name+" must be a finite number, not "+strconv.Quote(v))
		}
		*b.dst = &x
	}
	return p, nil
}

func checkRange(name string, n, lo, hi int) error {
	if n < lo || n > hi {
		return rangeError(name, lo, hi)
	}
	return nil
}

func rangeError(name string, lo, hi int) error {
	return domain.InvalidField(name, name+" must be an integer from "+strconv.Itoa(lo)+" to "+strconv.Itoa(hi))
}
