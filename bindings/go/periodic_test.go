package timerwheel

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestEveryRunsUntilStopped(t *testing.T) {
	w := newWheel(t, Config{})
	var runs atomic.Int32
	tm, err := w.Every(2*time.Millisecond, func() { runs.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "three periodic runs", func() bool { return runs.Load() >= 3 })
	if !tm.Stop() {
		t.Fatal("Stop of a live periodic timer = false, want true")
	}
	settled := runs.Load()
	time.Sleep(50 * time.Millisecond)
	// A run that had started before Stop may still finish, none starts after.
	if n := runs.Load(); n > settled+1 {
		t.Fatalf("%d runs after Stop", n-settled)
	}
}

func TestStopFromOwnPeriodicCallbackIsTrue(t *testing.T) {
	w := newWheel(t, Config{})
	var runs atomic.Int32
	results := make(chan bool, 1)
	ready := make(chan struct{})
	var tm *Timer
	tm, err := w.Every(time.Millisecond, func() {
		<-ready
		if runs.Add(1) == 3 {
			results <- tm.Stop()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	close(ready)
	if !receive(t, results, "Stop from the callback") {
		t.Fatal("Stop from the periodic timer's own callback = false, want true")
	}
	time.Sleep(50 * time.Millisecond)
	if n := runs.Load(); n != 3 {
		t.Fatalf("%d runs, want 3: a run started after Stop", n)
	}
	if tm.Stop() {
		t.Fatal("Stop after Stop = true, want false")
	}
}

// checkNoOverlap runs a slow periodic timer and fails if two of its runs overlap.
func checkNoOverlap(t *testing.T, every func(time.Duration, func()) (*Timer, error)) {
	var inside, overlaps, runs atomic.Int32
	tm, err := every(time.Millisecond, func() {
		if inside.Add(1) > 1 {
			overlaps.Add(1)
		}
		time.Sleep(5 * time.Millisecond)
		inside.Add(-1)
		runs.Add(1)
	})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "ten slow runs", func() bool { return runs.Load() >= 10 })
	tm.Stop()
	if n := overlaps.Load(); n != 0 {
		t.Fatalf("%d overlapping runs of one periodic timer", n)
	}
}

func TestPeriodicRunsNeverOverlap(t *testing.T) {
	w := newWheel(t, Config{MinWorkers: 4, MaxWorkers: 4})
	t.Run("fixed rate", func(t *testing.T) { checkNoOverlap(t, w.Every) })
	t.Run("fixed delay", func(t *testing.T) { checkNoOverlap(t, w.EveryFixedDelay) })
}

func TestFixedDelayWaitsAfterReturn(t *testing.T) {
	w := newWheel(t, Config{})
	const period = 10 * time.Millisecond
	gaps := make(chan time.Duration, 16)
	var last atomic.Int64 // UnixNano of the previous run's return
	tm, err := w.EveryFixedDelay(period, func() {
		if prev := last.Load(); prev != 0 {
			gaps <- time.Since(time.Unix(0, prev))
		}
		time.Sleep(5 * time.Millisecond)
		last.Store(time.Now().UnixNano())
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Stop()
	for i := 0; i < 3; i++ {
		if gap := receive(t, gaps, "a fixed-delay run"); gap < period {
			t.Errorf("run started %v after the previous returned, want at least %v", gap, period)
		}
	}
}

func TestResetMovesPeriodicTimer(t *testing.T) {
	w := newWheel(t, Config{})
	runs := make(chan struct{}, 8)
	tm, err := w.Every(time.Hour, func() { runs <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	if !tm.Reset(time.Millisecond) {
		t.Fatal("Reset of a live periodic timer = false, want true")
	}
	receive(t, runs, "the moved periodic run")
	if !tm.Stop() {
		t.Fatal("Stop after the moved run = false: the period should keep it active")
	}
}

// TestEveryKeepsAPeriodOfAFractionOfAMillisecond runs a 1.5 ms period on the 1 ms tick for
// 1.5 s: 1000 points. A period rounded to the millisecond (2 ms) gives 750 runs at most.
func TestEveryKeepsAPeriodOfAFractionOfAMillisecond(t *testing.T) {
	w := newWheel(t, Config{})
	const period, span = 1500 * time.Microsecond, 1500 * time.Millisecond
	var runs atomic.Int32
	tm, err := w.Every(period, func() { runs.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(span)
	tm.Stop()
	if n := runs.Load(); n < 850 || n > 1001 {
		t.Fatalf("%d runs of a %v period in %v, want about 1000", n, period, span)
	}
}
