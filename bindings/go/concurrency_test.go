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
	// The library counts a run when it starts the callback: the func may be on its way.
	eventually(t, "every counted func to run", func() bool {
		return uint64(fired.Load()) >= w.Stats().FiredOneShot
	})
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
	// The Go side of a callback that the library has started may still be on its way.
	eventually(t, "no registry entry live", func() bool { return liveEntries(w) == 0 })
}

// holdFiring runs act while the one-shot timer tm of w, which the library has just started
// to fire, waits before its func: its Go side waits for the registry's locks until act
// holds the timer's lock (or has returned), so act runs before the func could start.
func holdFiring(t *testing.T, w *Wheel, tm *Timer, act func()) {
	t.Helper()
	for i := range timers.shards {
		timers.shards[i].mu.Lock()
	}
	release := sync.OnceFunc(func() {
		for i := range timers.shards {
			timers.shards[i].mu.Unlock()
		}
	})
	defer release()
	eventually(t, "the library to start the callback", func() bool { return w.Stats().Fired == 1 })
	done := make(chan struct{})
	go func() {
		defer close(done)
		act()
	}()
	eventually(t, "act to take the timer's lock", func() bool {
		select {
		case <-done:
			return true
		default:
		}
		if tm.mu.TryLock() {
			tm.mu.Unlock()
			return false
		}
		return true
	})
	release() // act may need the registry (Reset adds a C timer)
	receive(t, done, "act to return")
}

func TestResetWhileFiringMovesIt(t *testing.T) {
	w := newWheel(t, Config{})
	ran := make(chan time.Time, 2)
	tm := mustAfterFunc(t, w, time.Millisecond, func() { ran <- time.Now() })
	var moved bool
	var resetAt time.Time
	holdFiring(t, w, tm, func() {
		resetAt = time.Now()
		moved = tm.Reset(30 * time.Millisecond)
	})
	if !moved {
		t.Fatal("Reset of a timer whose func had not started = false, want true")
	}
	if at := receive(t, ran, "the moved run"); at.Sub(resetAt) < 30*time.Millisecond {
		t.Fatalf("moved timer ran %v after Reset, before its 30ms", at.Sub(resetAt))
	}
	eventually(t, "the timer to end", func() bool { return w.Stats().Pending == 0 })
	time.Sleep(20 * time.Millisecond)
	if len(ran) != 0 {
		t.Fatal("the timer ran twice")
	}
	s := w.Stats()
	if s.Added != 1 || s.FiredOneShot != 1 {
		t.Fatalf("Added %d FiredOneShot %d, want 1 and 1", s.Added, s.FiredOneShot)
	}
	// The Go side of a callback that the library has started may still be on its way.
	eventually(t, "no registry entry live", func() bool { return liveEntries(w) == 0 })
}

func TestStopWhileFiringStopsIt(t *testing.T) {
	w := newWheel(t, Config{})
	var runs atomic.Int32
	tm := mustAfterFunc(t, w, time.Millisecond, func() { runs.Add(1) })
	var stopped bool
	holdFiring(t, w, tm, func() { stopped = tm.Stop() })
	if !stopped {
		t.Fatal("Stop of a timer whose func had not started = false, want true")
	}
	eventually(t, "the timer to end", func() bool { return w.Stats().Pending == 0 })
	time.Sleep(20 * time.Millisecond)
	if n := runs.Load(); n != 0 {
		t.Fatalf("a stopped timer ran %d times", n)
	}
	s := w.Stats()
	if s.Cancelled != 1 || s.FiredOneShot != 0 {
		t.Fatalf("Cancelled %d FiredOneShot %d, want 1 and 0", s.Cancelled, s.FiredOneShot)
	}
	checkInvariant(t, s)
	if tm.Stop() {
		t.Fatal("second Stop = true, want false")
	}
}
