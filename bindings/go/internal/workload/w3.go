package workload

import (
	"math/rand"
	"sort"
	"sync/atomic"
	"time"
)

// W3Result is the outcome of W3.
type W3Result struct {
	Fired                int
	TotalS               float64
	AddS                 float64 // time taken to add them all
	LateP50us, LateP99us float64
	LateMaxus            float64
	Complete             bool // every timer fired before the wait gave up
}

// W3 adds n timers due uniformly over [1 s, 3 s) (whole milliseconds, so that no
// implementation pays for rounding) and records how late each callback starts.
func W3(impl Impl, n int, seed int64) W3Result {
	rng := rand.New(rand.NewSource(seed))
	deadlines := make([]int64, n) // monotonic ns since start
	late := make([]int64, n)
	var fired atomic.Int64
	done := make(chan struct{})
	start := time.Now()
	for i := range deadlines {
		d := time.Second + time.Duration(rng.Intn(2000))*time.Millisecond
		deadlines[i] = int64(time.Since(start) + d)
		i := i
		impl.AfterFunc(d, func() {
			late[i] = int64(time.Since(start)) - deadlines[i]
			if fired.Add(1) == int64(n) {
				close(done)
			}
		})
	}
	added := time.Since(start)
	complete := true
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		complete = false
	}
	total := time.Since(start)
	got := int(fired.Load())
	if !complete {
		late = nil // some entries are still being written; only the count is reported
	}
	dumpLateness(impl.Name, late)
	p50, p99, max := percentiles(late)
	return W3Result{Fired: got, TotalS: total.Seconds(), AddS: added.Seconds(), LateP50us: p50, LateP99us: p99,
		LateMaxus: max, Complete: complete}
}

// percentiles returns the median, 99th percentile and maximum of ns, in microseconds.
func percentiles(ns []int64) (p50, p99, max float64) {
	if len(ns) == 0 {
		return 0, 0, 0
	}
	sorted := append([]int64(nil), ns...)
	sort.Slice(sorted, func(a, b int) bool { return sorted[a] < sorted[b] })
	us := func(p int) float64 { return float64(percentile(sorted, p)) / 1e3 }
	return us(50), us(99), us(100)
}

// percentile returns the p-th percentile (1 <= p <= 100) of the non-empty sorted, by nearest
// rank: the value of rank ceil(p/100 * n), counting from 1 (docs/benchmarks.md).
func percentile(sorted []int64, p int) int64 {
	rank := (len(sorted)*p + 99) / 100
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}
