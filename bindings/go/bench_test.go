package timerwheel_test

import (
	"testing"

	"github.com/timerwheel/timerwheel/bindings/go/internal/workload"
)

// The workloads of docs/benchmarks.md, each for the Go runtime's timers (the baseline) and for
// timerwheel, as sub-benchmarks of one run: compare their ns/op side by side, or run
// `go run ./cmd/bench` for the full sizes and a table of ratios.

// BenchmarkW1 adds b.N timers due in [1 s, 3600 s) and stops them in random order; ns/op
// is AfterFunc + Stop.
func BenchmarkW1(b *testing.B) {
	for _, mk := range workload.Both() {
		impl := mk()
		b.Run(impl.Name, func(b *testing.B) {
			r := workload.W1(impl, b.N, workload.Seed, b)
			b.ReportMetric(r.AddNs, "add-ns/op")
			b.ReportMetric(r.CancelNs, "stop-ns/op")
		})
		impl.Close()
	}
}

// BenchmarkW2 refreshes random ones of 100,000 live 30 s timers; ns/op is one Reset.
func BenchmarkW2(b *testing.B) {
	for _, mk := range workload.Both() {
		impl := mk()
		b.Run(impl.Name, func(b *testing.B) {
			b.ReportMetric(workload.W2(impl, 100_000, b.N, workload.Seed, b), "touch-ns/op")
		})
		impl.Close()
	}
}

// BenchmarkW3 fires b.N timers due over [1 s, 3 s) and reports their lateness; a run
// takes at least 3 s, so give the count: -benchtime 100000x.
func BenchmarkW3(b *testing.B) {
	for _, mk := range workload.Both() {
		impl := mk()
		b.Run(impl.Name, func(b *testing.B) {
			r := workload.W3(impl, b.N, workload.Seed)
			b.ReportMetric(r.LateP99us, "late-p99-us")
			b.ReportMetric(r.LateMaxus, "late-max-us")
		})
		impl.Close()
	}
}
