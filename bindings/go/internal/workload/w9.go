package workload

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// W9 sizes (docs/benchmarks.md): timers due W9Delay after they are added, at rates rising
// from W9FirstRate by W9RateStep a step, until p99 lateness reaches W9P99Limit or the
// producer cannot add at the rate.
const (
	W9Delay     = time.Millisecond
	W9P99Limit  = 5 * time.Millisecond
	W9FirstRate = 5_000.0
	W9RateStep  = 1.5
	W9LastRate  = 10_000_000.0
)

// W9Result is the outcome of W9: the highest rate that passed, and the first that did not.
type W9Result struct {
	Added                   int
	MaxRate, LateP99usAtMax float64
	NextRate, NextAchieved  float64
	NextLateP99us           float64
}

// W9 adds timers due W9Delay later at a rising rate, one step of stepLength each, with
// callbacks that only record their lateness.
func W9(impl Impl, stepLength time.Duration) W9Result {
	var r W9Result
	for rate := W9FirstRate; rate <= W9LastRate; rate *= W9RateStep {
		added, achieved, p99 := w9Step(impl, rate, stepLength)
		r.Added += added
		if p99 >= W9P99Limit || achieved < 0.95*rate {
			r.NextRate, r.NextAchieved, r.NextLateP99us = rate, achieved, float64(p99)/1e3
			break
		}
		r.MaxRate, r.LateP99usAtMax = rate, float64(p99)/1e3
	}
	return r
}

// w9Step adds at rate a second for length, waits for every callback (at most 5 s more),
// and returns how many it added, the rate it achieved and the p99 lateness (an hour when
// some callbacks never ran).
func w9Step(impl Impl, rate float64, length time.Duration) (int, float64, time.Duration) {
	var mu sync.Mutex
	var late []int64
	var fired atomic.Int64
	start := time.Now()
	added := 0
	for {
		elapsed := time.Since(start)
		if elapsed >= length {
			break
		}
		target := int(rate * elapsed.Seconds())
		if added >= target {
			time.Sleep(50 * time.Microsecond)
			continue
		}
		for ; added < target; added++ {
			due := time.Now().Add(W9Delay)
			impl.AfterFunc(W9Delay, func() {
				l := int64(time.Since(due))
				mu.Lock()
				late = append(late, l)
				mu.Unlock()
				fired.Add(1)
			})
		}
	}
	achieved := float64(added) / time.Since(start).Seconds()
	giveUp := time.Now().Add(W9Delay + 5*time.Second)
	for fired.Load() < int64(added) && time.Now().Before(giveUp) {
		time.Sleep(5 * time.Millisecond)
	}
	if fired.Load() < int64(added) {
		return added, achieved, time.Hour
	}
	mu.Lock()
	defer mu.Unlock()
	sort.Slice(late, func(a, b int) bool { return late[a] < late[b] })
	return added, achieved, time.Duration(percentile(late, 99))
}
