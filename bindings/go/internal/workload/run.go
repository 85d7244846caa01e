package workload

// Sizes of a full run, as BENCHMARKS.md sets them.
const (
	N         = 1_000_000
	W2Touches = 5_000_000
	Seed      = 42
)

// Record is one JSON line of the benchmark output.
type Record map[string]any

// RunAll runs W1, W2 and W3 for the baseline and for timerwheel, n timers each (touches
// refreshes in W2), and returns one record per implementation and workload, baseline first.
func RunAll(n, touches int) []Record {
	var out []Record
	for _, mk := range Both() {
		out = append(out, runW1(mk, n))
	}
	for _, mk := range Both() {
		out = append(out, runW2(mk, n, touches))
	}
	for _, mk := range Both() {
		out = append(out, runW3(mk, n))
	}
	return out
}

func header(impl Impl, workload string, n int) Record {
	return Record{"impl": impl.Name, "baseline": impl.Baseline, "workload": workload, "n": n}
}

func runW1(mk func() Impl, n int) Record {
	impl := mk()
	defer impl.Close()
	r := W1(impl, n, Seed, NoStopwatch{})
	rec := header(impl, "W1", n)
	rec["add_ns"], rec["cancel_ns"], rec["bytes_per_timer"] = r.AddNs, r.CancelNs, r.BytesPerTimer
	rec["add_cancel_ns"] = r.AddNs + r.CancelNs
	return rec
}

func runW2(mk func() Impl, n, touches int) Record {
	impl := mk()
	defer impl.Close()
	rec := header(impl, "W2", n)
	rec["touches"], rec["touch_ns"] = touches, W2(impl, n, touches, Seed, NoStopwatch{})
	return rec
}

func runW3(mk func() Impl, n int) Record {
	impl := mk()
	defer impl.Close()
	r := W3(impl, n, Seed)
	rec := header(impl, "W3", n)
	rec["fired"], rec["total_s"] = r.Fired, r.TotalS
	rec["late_p50_us"], rec["late_p99_us"], rec["late_max_us"] = r.LateP50us, r.LateP99us, r.LateMaxus
	return rec
}
