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
