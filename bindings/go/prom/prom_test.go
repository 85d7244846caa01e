package prom

import (
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	timerwheel "github.com/timerwheel/timerwheel/bindings/go"
)

// ranWheel returns a wheel that ran n callbacks.
func ranWheel(t *testing.T, n int) *timerwheel.Wheel {
	t.Helper()
	w, err := timerwheel.New(timerwheel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	var done sync.WaitGroup
	done.Add(n)
	for i := 0; i < n; i++ {
		if _, err := w.AfterFunc(time.Millisecond, done.Done); err != nil {
			t.Fatal(err)
		}
	}
	done.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for w.Stats().Fired != uint64(n) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	return w
}

// gathered registers a collector of w in a registry of its own and gathers it.
func gathered(t *testing.T, w *timerwheel.Wheel) map[string]*dto.MetricFamily {
	t.Helper()
	registry := prometheus.NewPedanticRegistry()
	registry.MustRegister(NewCollector(w))
	families, err := registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range families {
		byName[f.GetName()] = f
	}
	return byName
}

func TestTheTextParsesAndTheCollectorGivesTheStats(t *testing.T) {
	w := ranWheel(t, 3)
	text, err := w.MetricsText()
	if err != nil {
		t.Fatal(err)
	}
	var parser expfmt.TextParser
	if _, err := parser.TextToMetricFamilies(strings.NewReader(text)); err != nil {
		t.Fatalf("the text does not parse: %v\n%s", err, text)
	}
	families := gathered(t, w)
	stats := w.Stats()
	counter := func(name string) float64 { return families[name].GetMetric()[0].GetCounter().GetValue() }
	if got := counter("timerwheel_timers_fired_total"); got != float64(stats.Fired) || got != 3 {
		t.Errorf("fired %v, Stats %d", got, stats.Fired)
	}
	if got := counter("timerwheel_timers_added_total"); got != 3 {
		t.Errorf("added %v, want 3", got)
	}
	if got := families["timerwheel_workers"].GetMetric()[0].GetGauge().GetValue(); got < 1 {
		t.Errorf("workers %v", got)
	}
	h := families["timerwheel_lateness_seconds"].GetMetric()[0].GetHistogram()
	if h.GetSampleCount() != 3 {
		t.Errorf("lateness count %d, want 3", h.GetSampleCount())
	}
	buckets := h.GetBucket()
	if len(buckets) < 17 || buckets[0].GetUpperBound() != 0.00005 {
		t.Fatalf("buckets %v", buckets)
	}
	for i := 1; i < len(buckets); i++ {
		if buckets[i].GetCumulativeCount() < buckets[i-1].GetCumulativeCount() {
			t.Fatalf("bucket %v below the one before: not cumulative", buckets[i])
		}
	}
	if last := buckets[len(buckets)-1]; last.GetCumulativeCount() > 3 || math.IsInf(last.GetUpperBound(), 1) && last.GetCumulativeCount() != 3 {
		t.Errorf("last bucket %v", last)
	}
}

func TestTheCollectorIsConsistentAndReportsAClosedWheel(t *testing.T) {
	w := ranWheel(t, 1)
	if problems, err := testutil.CollectAndLint(NewCollector(w)); err != nil || len(problems) != 0 {
		t.Fatalf("lint: %v %v", err, problems)
	}
	registry := prometheus.NewRegistry()
	registry.MustRegister(NewCollector(w))
	w.Close()
	if _, err := registry.Gather(); !errors.Is(err, timerwheel.ErrClosed) {
		t.Fatalf("gathering a closed wheel gave %v, want ErrClosed", err)
	}
}
