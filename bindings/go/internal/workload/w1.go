package workload

import (
	"math/rand"
	"runtime"
	"time"
)

// W1Result is the outcome of W1.
type W1Result struct {
	AddNs, CancelNs, BytesPerTimer float64
}

// W1 adds n one-shot timers with delays uniform in [1 s, 3600 s), then stops them all in
// random order.
func W1(impl Impl, n int, seed int64, sw Stopwatch) W1Result {
	sw.StopTimer()
	rng := rand.New(rand.NewSource(seed))
	delays := make([]time.Duration, n)
	for i := range delays {
		delays[i] = time.Second + time.Duration(rng.Int63n(int64(3599*time.Second)))
	}
	order := rng.Perm(n)
	timers := make([]Timer, n)
	nop := func() {}

	rss0 := settledRSS()
	sw.StartTimer()
	start := time.Now()
	for i, d := range delays {
		timers[i] = impl.AfterFunc(d, nop)
	}
	add := time.Since(start)
	sw.StopTimer()
	rss1 := settledRSS()

	sw.StartTimer()
	start = time.Now()
	for _, i := range order {
		timers[i].Stop()
	}
	cancel := time.Since(start)
	sw.StopTimer()
	runtime.KeepAlive(timers)
	return W1Result{
		AddNs:         perOp(add, n),
		CancelNs:      perOp(cancel, n),
		BytesPerTimer: float64(rss1-rss0) / float64(n),
	}
}

func perOp(d time.Duration, n int) float64 {
	return float64(d.Nanoseconds()) / float64(n)
}
