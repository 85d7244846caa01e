package timerwheel

import (
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestManyGoroutines(t *testing.T) {
	w := newWheel(t, Config{})
	const goroutines, perGoroutine = 8, 2000
	var fired, stopped atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed))
			for i := 0; i < perGoroutine; i++ {
				d := time.Duration(rng.Intn(20)) * time.Millisecond
				tm, err := w.AfterFunc(d, func() { fired.Add(1) })
				if err != nil {
					t.Error(err)
					return
				}
				switch rng.Intn(3) {
				case 0:
					if tm.Stop() {
						stopped.Add(1)
					}
				case 1:
					tm.Reset(d) // either moved (true) or scheduled again (false): one more run
				}
			}
		}(int64(g))
	}
	wg.Wait()
	eventually(t, "every timer to fire or stop", func() bool { return w.Stats().Pending == 0 })
	s := w.Stats()
	checkInvariant(t, s)
	if got := uint64(fired.Load()); got != s.FiredOneShot {
		t.Fatalf("%d funcs ran, the wheel counted %d", got, s.FiredOneShot)
	}
	if got := uint64(stopped.Load()); got != s.Cancelled {
		t.Fatalf("%d Stops returned true, the wheel counted %d cancels", got, s.Cancelled)
	}
}

func TestStopAndResetRaceOneTimer(t *testing.T) {
	w := newWheel(t, Config{})
	var runs atomic.Int64
	tm := mustAfterFunc(t, w, time.Millisecond, func() { runs.Add(1) })
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				tm.Reset(time.Duration(i%3) * time.Millisecond)
				tm.Stop()
			}
		}()
	}
	wg.Wait()
	tm.Stop()
	eventually(t, "the timer to end", func() bool { return w.Stats().Pending == 0 })
	checkInvariant(t, w.Stats())
	if n := timers.countWheel(w); n != 0 {
		t.Fatalf("%d registry entries live after the timer ended", n)
	}
}

// TestResetWhileFiringRunsBoth resets a one-shot timer whose func the library has started
// but whose Go side has not yet run: Reset returns false and schedules a second run, and the
// first run still happens.
func TestResetWhileFiringRunsBoth(t *testing.T) {
	w := newWheel(t, Config{})
	var runs atomic.Int32
	tm := mustAfterFunc(t, w, time.Millisecond, func() { runs.Add(1) })

	timers.mu.Lock() // holds the firing callback before it finds its timer
	eventually(t, "the library to start the callback", func() bool { return w.Stats().Fired == 1 })
	reset := make(chan bool)
	go func() { reset <- tm.Reset(time.Millisecond) }()
	time.Sleep(20 * time.Millisecond) // lets Reset reach the registry too
	timers.mu.Unlock()

	if receive(t, reset, "Reset") {
		t.Fatal("Reset of a timer that had fired = true, want false")
	}
	eventually(t, "both runs", func() bool { return runs.Load() == 2 })
	eventually(t, "the timer to end", func() bool { return w.Stats().Pending == 0 })
	if n := timers.countWheel(w); n != 0 {
		t.Fatalf("%d registry entries live after the timer ended", n)
	}
}
