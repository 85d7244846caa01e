package workload

import (
	"math/rand"
	"time"
)

// W2 keeps n live 30 s timers and resets a random one to 30 s from now, touches times; it
// returns the nanoseconds per touch.
func W2(impl Impl, n, touches int, seed int64, sw Stopwatch) float64 {
	sw.StopTimer()
	const timeout = 30 * time.Second
	rng := rand.New(rand.NewSource(seed))
	timers := make([]Timer, n)
	nop := func() {}
	for i := range timers {
		timers[i] = impl.AfterFunc(timeout, nop)
	}
	picks := make([]int32, touches)
	for i := range picks {
		picks[i] = int32(rng.Intn(n))
	}

	sw.StartTimer()
	start := time.Now()
	for _, i := range picks {
		timers[i].Reset(timeout)
	}
	touch := time.Since(start)
	sw.StopTimer()

	for _, t := range timers {
		t.Stop()
	}
	return perOp(touch, touches)
}
