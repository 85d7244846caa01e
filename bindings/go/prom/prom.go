// Package prom serves a timerwheel.Wheel's metrics as a prometheus.Collector:
//
//	prometheus.MustRegister(prom.NewCollector(wheel))
//	http.Handle("/metrics", promhttp.Handler())
//
// It is a module of its own, so that the binding itself depends on no Prometheus package.
// The figures are those of Wheel.MetricsText, the exposition the library writes for every
// interface (docs/metrics.md), parsed: the same names, types, help texts and histogram
// buckets. To tell several wheels apart in one registry, register each collector under
// labels of its own with prometheus.WrapRegistererWith.
package prom

import (
	"fmt"
	"math"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	timerwheel "github.com/timerwheel/timerwheel/bindings/go"
)

// Collector collects the metrics of one wheel at each scrape.
type Collector struct {
	wheel *timerwheel.Wheel
}

// NewCollector returns a Collector of w's metrics (timerwheel.Default() for the shared
// wheel).
func NewCollector(w *timerwheel.Wheel) *Collector {
	return &Collector{wheel: w}
}

// Describe sends the descriptions of the metrics Collect gives, which are always the same.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	prometheus.DescribeByCollect(c, ch)
}

// Collect sends the wheel's metrics now. A closed wheel gives an invalid metric with
// timerwheel.ErrClosed, which the registry reports.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	families, err := c.families()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(prometheus.NewInvalidDesc(err), err)
		return
	}
	for _, family := range families {
		if err := send(ch, family); err != nil {
			ch <- prometheus.NewInvalidMetric(prometheus.NewInvalidDesc(err), err)
		}
	}
}

// families parses the wheel's text, in its order.
func (c *Collector) families() ([]*dto.MetricFamily, error) {
	text, err := c.wheel.MetricsText()
	if err != nil {
		return nil, err
	}
	var parser expfmt.TextParser
	byName, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("timerwheel metrics: %w", err)
	}
	var ordered []*dto.MetricFamily
	for _, line := range strings.Split(text, "\n") {
		if name, ok := strings.CutPrefix(line, "# TYPE "); ok {
			ordered = append(ordered, byName[strings.Fields(name)[0]])
		}
	}
	return ordered, nil
}

// send sends the one metric of a family (the wheel's metrics have no labels).
func send(ch chan<- prometheus.Metric, family *dto.MetricFamily) error {
	desc := prometheus.NewDesc(family.GetName(), family.GetHelp(), nil, nil)
	for _, m := range family.GetMetric() {
		var metric prometheus.Metric
		var err error
		switch family.GetType() {
		case dto.MetricType_COUNTER:
			metric, err = prometheus.NewConstMetric(desc, prometheus.CounterValue, m.GetCounter().GetValue())
		case dto.MetricType_GAUGE:
			metric, err = prometheus.NewConstMetric(desc, prometheus.GaugeValue, m.GetGauge().GetValue())
		case dto.MetricType_HISTOGRAM:
			metric, err = histogram(desc, m.GetHistogram())
		default:
			err = fmt.Errorf("timerwheel metrics: %s has type %s", family.GetName(), family.GetType())
		}
		if err != nil {
			return err
		}
		ch <- metric
	}
	return nil
}

// histogram rebuilds a parsed histogram; the +Inf bucket is its count.
func histogram(desc *prometheus.Desc, h *dto.Histogram) (prometheus.Metric, error) {
	buckets := make(map[float64]uint64, len(h.GetBucket()))
	for _, b := range h.GetBucket() {
		if !math.IsInf(b.GetUpperBound(), +1) {
			buckets[b.GetUpperBound()] = b.GetCumulativeCount()
		}
	}
	return prometheus.NewConstHistogram(desc, h.GetSampleCount(), h.GetSampleSum(), buckets)
}
