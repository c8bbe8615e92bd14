package usecase

import (
	"net/url"
	"strconv"
	"time"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/formats"
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
	Sort          string // "" (newest first), "source", "-source"
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
	switch s := readmodel.ListSort(p.Sort); s {
	case readmodel.SortImported, readmodel.SortSource, readmodel.SortSourceDesc:
		f.Sort = s
	default:
		return f, &domain.ValidationError{Code: "invalid_request", Field: "sort", Message: "sort must be source or -source (omit it for newest first)"}
	}
	if len(p.Q) > maxQueryLen {
		return f, &domain.ValidationError{Code: "invalid_request", Field: "q", Message: "q must be at most " + strconv.Itoa(maxQueryLen) + " characters"}
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
			return f, &domain.ValidationError{Code: "invalid_request", Field: "tz", Message: "unknown time zone " + strconv.Quote(p.TZ)}
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
			return f, &domain.ValidationError{Code: "invalid_request", Field: d.name, Message: d.name + " must be a date YYYY-MM-DD"}
		}
		if d.next { // inclusive: everything before the next day's start
			t = t.AddDate(0, 0, 1)
		}
		*d.dst = &t
	}
	return f, nil
}

// ListParamsFromQuery reads ?limit&offset&source_id&from&to&tz&q&sort. A limit or
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
	return p, nil
}

func checkRange(name string, n, lo, hi int) error {
	if n < lo || n > hi {
		return rangeError(name, lo, hi)
	}
	return nil
}

func rangeError(name string, lo, hi int) error {
	return &domain.ValidationError{Code: "invalid_request", Field: name, Message: name + " must be an integer from " + strconv.Itoa(lo) + " to " + strconv.Itoa(hi)}
}
