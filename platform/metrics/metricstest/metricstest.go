// Package metricstest scrapes a /metrics endpoint the way Prometheus does
// (HTTP, text exposition format, the official parser) and looks samples up
// by name and labels, so tests assert on what an operator's dashboard sees.
package metricstest

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

// Families is one scrape.
type Families map[string]*dto.MetricFamily

// Scrape GETs url and parses the text format.
func Scrape(t testing.TB, url string) Families {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/plain")
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return fams
}

// Value returns the sample of family name whose labels include every
// "key=value" given: a counter's or gauge's value, a histogram's count. A
// missing series reads 0 (Prometheus shows no series until the first
// observation). Several matching series are summed.
func (f Families) Value(name string, labels ...string) float64 {
	var sum float64
	for _, m := range f[name].GetMetric() { // nil-safe: a missing family has no series
		if !matches(m, labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		}
	}
	return sum
}

// Has reports whether family name has a series with the labels.
func (f Families) Has(name string, labels ...string) bool {
	return slices.ContainsFunc(f[name].GetMetric(), func(m *dto.Metric) bool { return matches(m, labels) })
}

// LabelValues lists the distinct values of label across family name.
func (f Families) LabelValues(name, label string) []string {
	seen := map[string]bool{}
	for _, m := range f[name].GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == label {
				seen[lp.GetValue()] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

func matches(m *dto.Metric, labels []string) bool {
	for _, l := range labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			panic(fmt.Sprintf("metricstest: label %q is not key=value", l))
		}
		if !slices.ContainsFunc(m.GetLabel(), func(lp *dto.LabelPair) bool { return lp.GetName() == k && lp.GetValue() == v }) {
			return false
		}
	}
	return true
}
