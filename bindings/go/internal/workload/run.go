package workload

import (
	"fmt"
	"time"
)

// Sizes of a full run, as docs/benchmarks.md sets them.
const (
	N         = 1_000_000
	W2Touches = 5_000_000
	Seed      = 42
)

// Workloads names the workloads, in the order they run. W9 (throughput) runs when asked
// for (-workloads W9).
var Workloads = []string{"W1", "W2", "W3"}

// W9StepLength is how long each rate of W9 runs.
var W9StepLength = time.Second

// Record is one JSON line of the benchmark output.
type Record map[string]any

// Run runs one workload against the implementation of that name, n timers (touches
// refreshes in W2), and returns its record.
func Run(workload, implName string, n, touches int) (Record, error) {
	impl, ok := NewImpl(implName)
	if !ok {
		return nil, fmt.Errorf("unknown implementation %q", implName)
	}
	defer impl.Close()
	rec := Record{"impl": impl.Name, "baseline": impl.Baseline, "workload": workload, "n": n}
	switch workload {
	case "W1":
		r := W1(impl, n, Seed, NoStopwatch{})
		rec["add_ns"], rec["cancel_ns"], rec["bytes_per_timer"] = r.AddNs, r.CancelNs, r.BytesPerTimer
		rec["add_cancel_ns"] = r.AddNs + r.CancelNs
	case "W2":
		rec["touches"], rec["touch_ns"] = touches, W2(impl, n, touches, Seed, NoStopwatch{})
	case "W3":
		r := W3(impl, n, Seed)
		rec["fired"], rec["total_s"], rec["add_s"] = r.Fired, r.TotalS, r.AddS
		rec["late_p50_us"], rec["late_p99_us"], rec["late_max_us"] = r.LateP50us, r.LateP99us, r.LateMaxus
	case "W9":
		r := W9(impl, W9StepLength)
		rec["n"] = r.Added
		rec["max_rate"], rec["late_p99_us_at_max"] = r.MaxRate, r.LateP99usAtMax
		rec["next_rate"], rec["next_achieved"], rec["next_late_p99_us"] = r.NextRate, r.NextAchieved, r.NextLateP99us
	default:
		return nil, fmt.Errorf("unknown workload %q", workload)
	}
	return rec, nil
}
