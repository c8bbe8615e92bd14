package usecase

import (
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/projections/readmodel"
)

// The list rules are shared by REST (query string) and Connect (message);
// these are the answers a REST client saw before they were shared.
func TestListParamsFromQuery(t *testing.T) {
	t.Parallel()
	type result struct {
		limit, offset int
		from, to      string
	}
	// filter returns the filter REST would use for a query string, or the
	// field of the validation error it would answer with.
	filter := func(raw string) (result, string) {
		q, err := url.ParseQuery(raw)
		require.NoError(t, err)
		p, err := ListParamsFromQuery(q)
		var r result
		if err == nil {
			var lf readmodel.ListFilter
			if lf, err = p.Filter(); err == nil {
				r.limit, r.offset = lf.Limit, lf.Offset
				if lf.From != nil {
					r.from = lf.From.Format(time.RFC3339)
				}
				if lf.To != nil {
					r.to = lf.To.Format(time.RFC3339)
				}
				return r, ""
			}
		}
		var v *domain.ValidationError
		require.True(t, errors.As(err, &v), "%s: %v", raw, err)
		return r, v.Field
	}
	f, field := filter("")
	require.Empty(t, field)
	require.Equal(t, 50, f.limit)
	require.Equal(t, 0, f.offset)
	f, field = filter("limit=1000&offset=3&from=2026-11-01&to=2026-11-02&tz=Europe/Paris")
	require.Empty(t, field)
	require.Equal(t, 1000, f.limit)
	require.Equal(t, 3, f.offset)
	require.Equal(t, "2026-11-01T00:00:00+01:00", f.from)
	require.Equal(t, "2026-11-03T00:00:00+01:00", f.to) // inclusive "to"
	for raw, want := range map[string]string{
		"limit=0":                 "limit",
		"limit=abc":               "limit",
		"limit=5000&offset=x":     "limit", // the first bad parameter is reported
		"offset=-1":               "offset",
		"offset=99999999999999":   "offset",
		"tz=Mars/Olympus":         "tz",
		"from=yesterday":          "from",
		"to=2026-13-01":           "to",
		"limit=10&from=2026-1-1x": "from",
		"sort=title":              "sort",
	} {
		_, field := filter(raw)
		require.Equal(t, want, field, raw)
	}
}
