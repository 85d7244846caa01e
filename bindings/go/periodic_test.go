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

// overlapProbe counts the runs of a func that began while another was under way.
type overlapProbe struct {
	inside, overlaps atomic.Int32
}

func (p *overlapProbe) enter() {
	if p.inside.Add(1) > 1 {
		p.overlaps.Add(1)
	}
}

func (p *overlapProbe) leave() {
	p.inside.Add(-1)
}

// checkNoOverlap runs a slow periodic timer and fails if two of its runs overlap.
func checkNoOverlap(t *testing.T, every func(time.Duration, func()) (*Timer, error)) {
	var overlap overlapProbe
	var runs atomic.Int32
	tm, err := every(time.Millisecond, func() {
		overlap.enter()
		time.Sleep(5 * time.Millisecond)
		overlap.leave()
		runs.Add(1)
	})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "ten slow runs", func() bool { return runs.Load() >= 10 })
	tm.Stop()
	if n := overlap.overlaps.Load(); n != 0 {
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

// TestEveryKeepsAPeriodOfAFractionOfATick runs a 15 ms period on a 10 ms tick for about
// 1.5 s: 100 points. A period rounded up to the tick (20 ms) gives at most 0.75 of them.
// The points are counted over the time the timer was live as measured, not the span
// asked of Sleep, which a loaded machine overruns. Not 1.5 ms on the 1 ms tick: there a
// loaded machine's stalls coalesced the points they missed (827 runs of 1000), near
// what tells the period from a rounded one; a stall of 15 ms is rare.
func TestEveryKeepsAPeriodOfAFractionOfATick(t *testing.T) {
	w := newWheel(t, Config{Tick: 10 * time.Millisecond})
	const period, span = 15 * time.Millisecond, 1500 * time.Millisecond
	var runs atomic.Int32
	start := time.Now()
	tm, err := w.Every(period, func() { runs.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(span)
	tm.Stop()
	points := float64(time.Since(start)) / float64(period)
	if n := float64(runs.Load()); n < 0.85*points || n > points+1 {
		t.Fatalf("%v runs of a %v period in %v (%.1f points), want about one a point",
			n, period, time.Since(start), points)
	}
}

// Resets from the func itself and from another goroutine, at zero delay, while runs take
// longer than the period: the runs still never overlap.
func TestPeriodicRunsNeverOverlapUnderResets(t *testing.T) {
	w := newWheel(t, Config{MinWorkers: 4, MaxWorkers: 4})
	var overlap overlapProbe
	var runs atomic.Int32
	var tm *Timer
	ready := make(chan struct{})
	tm, err := w.Every(time.Millisecond, func() {
		<-ready
		overlap.enter()
		tm.Reset(0)
		time.Sleep(2 * time.Millisecond)
		overlap.leave()
		runs.Add(1)
	})
	if err != nil {
		t.Fatal(err)
	}
	close(ready)
	for start := time.Now(); time.Since(start) < 150*time.Millisecond; {
		tm.Reset(0)
		time.Sleep(100 * time.Microsecond)
	}
	if _, err := tm.StopWait(); err != nil {
		t.Fatal(err)
	}
	if n := overlap.overlaps.Load(); n != 0 || runs.Load() < 10 {
		t.Fatalf("%d overlapping runs in %d runs of one periodic timer", n, runs.Load())
	}
}

// Stop and Reset of a periodic timer while its func runs: the timer armed anew runs, but
// not beside the run from before the Stop.
func TestPeriodicResetAfterStopDuringARunDoesNotOverlapIt(t *testing.T) {
	w := newWheel(t, Config{MinWorkers: 4, MaxWorkers: 4})
	var overlap overlapProbe
	var runs atomic.Int32
	started := make(chan struct{}, 1)
	tm, err := w.Every(time.Millisecond, func() {
		overlap.enter()
		select {
		case started <- struct{}{}:
		default:
		}
		time.Sleep(20 * time.Millisecond)
		overlap.leave()
		runs.Add(1)
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		receive(t, started, "a run")
		tm.Stop()
		tm.Reset(0)
	}
	eventually(t, "runs after the Resets", func() bool { return runs.Load() >= 6 })
	if _, err := tm.StopWait(); err != nil {
		t.Fatal(err)
	}
	if n := overlap.overlaps.Load(); n != 0 {
		t.Fatalf("%d runs overlapped one from before a Stop", n)
	}
}
