package workload

import (
	"fmt"
	"io"
)

// metrics are the figures compared in the table, per workload, lower is better but where
// marked.
var metrics = map[string][]string{
	"W1": {"add_ns", "cancel_ns", "add_cancel_ns", "bytes_per_timer"},
	"W2": {"touch_ns"},
	"W3": {"late_p50_us", "late_p99_us", "late_max_us", "add_s", "total_s"},
	"W9": {"max_rate"}, // higher is better
}

// WriteTable prints each metric of timerwheel next to the baseline's of the same workload,
// with the ratio ours / baseline.
func WriteTable(w io.Writer, records []Record) {
	fmt.Fprintf(w, "%-4s %-16s %14s %14s %8s\n", "", "metric", "go-time", "timerwheel-go", "ratio")
	base := map[string]Record{}
	for _, r := range records {
		if r["baseline"] == true {
			base[r["workload"].(string)] = r
		}
	}
	for _, r := range records {
		wl := r["workload"].(string)
		b, ok := base[wl]
		if r["baseline"] == true || !ok {
			continue
		}
		for _, m := range metrics[wl] {
			ours, theirs := toFloat(r[m]), toFloat(b[m])
			fmt.Fprintf(w, "%-4s %-16s %14.2f %14.2f %7.2fx\n", wl, m, theirs, ours, ours/theirs)
		}
	}
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int:
		return float64(x)
	}
	return 0
}
