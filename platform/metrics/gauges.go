package metrics

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Sample is one value of a scrape-time gauge; Labels are in the order of its
// GaugeSource.Labels.
type Sample struct {
	Labels []string
	Value  float64
}

// GaugeSource is a gauge whose values are read when Prometheus scrapes:
// state that lives elsewhere (the event log's head, the relay cursor, queued
// jobs, files on disk) and is the same whichever instance is asked.
type GaugeSource struct {
	Name   string // without the critic_ prefix
	Help   string
	Labels []string
	Read   func(ctx context.Context) ([]Sample, error)
}

// sourceTimeout bounds one scrape's reads, so a stuck database slows a scrape
// instead of hanging it.
const sourceTimeout = 3 * time.Second

// AddGauges registers scrape-time gauges. A source whose read fails emits no
// samples for that scrape and counts in critic_metrics_source_errors_total.
func (m *Metrics) AddGauges(srcs ...GaugeSource) {
	c := &sourceCollector{srcs: srcs, errs: m.sourceErrors()}
	f := m.factory()
	for _, s := range srcs {
		f.named(s.Name)
		c.descs = append(c.descs, prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", s.Name), s.Help, s.Labels, nil))
	}
	m.reg.MustRegister(c)
}

func (m *Metrics) sourceErrors() *prometheus.CounterVec {
	m.srcMu.Lock()
	defer m.srcMu.Unlock()
	if m.srcErrs == nil {
		m.srcErrs = m.factory().counterVec("metrics_source_errors_total", "Scrape-time reads that failed (the gauge is missing from that scrape), by source.", "source")
	}
	return m.srcErrs
}

type sourceCollector struct {
	srcs  []GaugeSource
	descs []*prometheus.Desc
	errs  *prometheus.CounterVec
}

func (c *sourceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *sourceCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), sourceTimeout)
	defer cancel()
	for i, s := range c.srcs {
		samples, err := s.Read(ctx)
		if err != nil {
			c.errs.WithLabelValues(s.Name).Inc()
			continue
		}
		for _, v := range samples {
			m, err := prometheus.NewConstMetric(c.descs[i], prometheus.GaugeValue, v.Value, v.Labels...)
			if err == nil {
				ch <- m
			}
		}
	}
}

// Value is a source of one unlabeled sample.
func Value(v float64) []Sample { return []Sample{{Value: v}} }

// SnapshotFiles reports the DuckDB query snapshots under dir: how many owner
// files there are and their total size on disk (WAL included), without owner
// labels.
func SnapshotFiles(dir string) []GaugeSource {
	walk := func() (files int, bytes int64, err error) {
		err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) {
					return nil
				}
				return err
			}
			if d.IsDir() {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return nil // removed while walking
			}
			name := d.Name()
			if strings.HasSuffix(name, ".duckdb") {
				files++
			}
			if strings.HasSuffix(name, ".duckdb") || strings.HasSuffix(name, ".duckdb.wal") {
				bytes += info.Size()
			}
			return nil
		})
		return files, bytes, err
	}
	return []GaugeSource{
		{Name: "duckdb_snapshot_bytes", Help: "Bytes on disk of every per-owner DuckDB query snapshot of this instance.",
			Read: func(context.Context) ([]Sample, error) {
				_, b, err := walk()
				return Value(float64(b)), err
			}},
		{Name: "duckdb_snapshots", Help: "Per-owner DuckDB query snapshots this instance keeps.",
			Read: func(context.Context) ([]Sample, error) {
				n, _, err := walk()
				return Value(float64(n)), err
			}},
	}
}
