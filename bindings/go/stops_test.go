package timerwheel

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// settle waits until w has no pending timer and every fire the library counted has
// reached its func (a run counted by the library may still be on its way), then returns
// the wheel's Stats.
func settle(t *testing.T, w *Wheel, ran func() uint64) Stats {
	t.Helper()
	eventually(t, "nothing pending", func() bool { return w.Stats().Pending == 0 })
	eventually(t, "every counted run to reach its func", func() bool {
		return ran() >= w.Stats().FiredOneShot
	})
	return w.Stats()
}

// Thousands of one-shots due within a few milliseconds, stopped by several goroutines
// while they fire: for each timer exactly one of "Stop returned true" and "its func ran",
// and the wheel's counters and registry agree with them.
func TestStopRacingTheFireFromManyGoroutines(t *testing.T) {
	w := newWheel(t, Config{MaxWorkers: 4})
	const goroutines, perGoroutine = 8, 2500
	type result struct {
		ran     atomic.Int32
		stopped bool
	}
	results := make([][]result, goroutines)
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		results[g] = make([]result, perGoroutine)
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			// Batches due within 0-2 ms, stopped after a wait of 0-2 ms: some fire first.
			const batch = 50
			timers := make([]*Timer, batch)
			for first := 0; first < perGoroutine; first += batch {
				for k := range timers {
					r := &results[g][first+k]
					d := time.Duration(k%3) * time.Millisecond
					timers[k] = mustAfterFunc(t, w, d, func() { r.ran.Add(1) })
				}
				time.Sleep(time.Duration(first/batch%3) * time.Millisecond)
				for k, tm := range timers {
					results[g][first+k].stopped = tm.Stop()
				}
			}
		}(g)
	}
	wg.Wait()
	var runs, stops uint64
	count := func() uint64 {
		n := uint64(0)
		for g := range results {
			for i := range results[g] {
				n += uint64(results[g][i].ran.Load())
			}
		}
		return n
	}
	s := settle(t, w, count)
	for g := range results {
		for i := range results[g] {
			r := &results[g][i]
			ran := r.ran.Load()
			if ran > 1 || (ran == 1) == r.stopped {
				t.Fatalf("timer %d/%d: Stop = %v, func ran %d times", g, i, r.stopped, ran)
			}
			runs += uint64(ran)
			if r.stopped {
				stops++
			}
		}
	}
	t.Logf("%d runs, %d stops", runs, stops)
	checkInvariant(t, s)
	if s.FiredOneShot != runs || s.Cancelled != stops {
		t.Fatalf("Stats: FiredOneShot %d Cancelled %d, the timers: %d runs, %d stops",
			s.FiredOneShot, s.Cancelled, runs, stops)
	}
	// A fire queued before its Stop releases its entry when a deliverer takes it, maybe
	// after the library's counters have settled.
	eventually(t, "no registry entry live", func() bool { return liveEntries(w) == 0 })
}

// Many timers, each reset and stopped by two goroutines at once: every arming (the add,
// and each Reset that found the timer ended and scheduled it again) ends exactly once, by
// a run of its func or a Stop that returned true.
func TestResetRacingStopEndsEachArmingOnce(t *testing.T) {
	w := newWheel(t, Config{MaxWorkers: 4})
	const timers, rounds = 400, 20
	var runs, stops, rearms atomic.Uint64
	var wg sync.WaitGroup
	for i := 0; i < timers; i++ {
		tm := mustAfterFunc(t, w, time.Duration(i%3)*time.Millisecond, func() { runs.Add(1) })
		wg.Add(2)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				if !tm.Reset(time.Duration(r%3) * time.Millisecond) {
					rearms.Add(1)
				}
			}
		}()
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				if tm.Stop() {
					stops.Add(1)
				}
				if r%4 == 0 {
					time.Sleep(100 * time.Microsecond)
				}
			}
			if tm.Stop() { // after the last Reset or not: counted either way
				stops.Add(1)
			}
		}()
	}
	wg.Wait()
	s := settle(t, w, runs.Load)
	t.Logf("%d runs, %d stops, %d Resets armed anew", runs.Load(), stops.Load(), rearms.Load())
	armings := timers + rearms.Load()
	if ends := runs.Load() + stops.Load(); ends != armings {
		t.Fatalf("%d armings, %d ends (%d runs, %d stops)", armings, ends, runs.Load(),
			stops.Load())
	}
	checkInvariant(t, s)
	if s.FiredOneShot != runs.Load() || s.Cancelled != stops.Load() {
		t.Fatalf("Stats: FiredOneShot %d Cancelled %d, the timers: %d runs, %d stops",
			s.FiredOneShot, s.Cancelled, runs.Load(), stops.Load())
	}
	// A fire queued before its Stop releases its entry when a deliverer takes it, maybe
	// after the library's counters have settled.
	eventually(t, "no registry entry live", func() bool { return liveEntries(w) == 0 })
}

// Stops whose deletes are still queued when the wheel closes count as stops, not as
// discarded timers; a Stop after Close returns false; nothing is left in the registry.
func TestStopsQueuedAtCloseCountAsStops(t *testing.T) {
	w, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	never := func() { t.Error("a stopped or discarded timer ran") }
	const stopped, pending = stopBatch / 2, 5 // fewer Stops than fill a batch
	for i := 0; i < stopped; i++ {
		if !mustAfterFunc(t, w, time.Hour, never).Stop() {
			t.Fatal("Stop of a pending timer = false")
		}
	}
	left := make([]*Timer, pending)
	for i := range left {
		left[i] = mustAfterFunc(t, w, time.Hour, never)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tm := range left {
		if tm.Stop() {
			t.Fatal("Stop after Close = true")
		}
	}
	s := w.Stats()
	if s.Cancelled != stopped || s.Discarded != pending || s.Pending != 0 {
		t.Fatalf("after Close: Cancelled %d Discarded %d Pending %d, want %d, %d, 0",
			s.Cancelled, s.Discarded, s.Pending, stopped, pending)
	}
	checkInvariant(t, s)
	if n := timers.countWheel(w); n != 0 {
		t.Fatalf("%d registry entries live after Close", n)
	}
}

// What reads the library's view sees a Stop that has returned: Stats counts it, Export
// leaves it out, and the place it held under MaxTimers is free.
func TestStopIsSeenAtOnce(t *testing.T) {
	w := newWheel(t, Config{MaxTimers: 1})
	a := mustAfterFunc(t, w, time.Hour, func() {})
	if !a.Stop() {
		t.Fatal("Stop of a pending timer = false")
	}
	if s := w.Stats(); s.Pending != 0 || s.Cancelled != 1 {
		t.Fatalf("after Stop: Pending %d Cancelled %d, want 0 and 1", s.Pending, s.Cancelled)
	}
	b := mustAfterFunc(t, w, time.Hour, func() {}) // the only place: a's must be free
	b.Stop()
	c := mustAfterFunc(t, w, time.Hour, func() {})
	pending, _, err := w.Export()
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 || pending[0].Timer != c {
		t.Fatalf("Export after two Stops lists %d timers, want c alone", len(pending))
	}
}

// Stops by the thousand, from several goroutines, fill many batches of deletes: what
// reads the library's view right after sees every one of them (Stats, the places under
// MaxTimers, Export, Close), however far the deletes of the full batches have got.
func TestFullBatchesOfStopsAreSeenAtOnce(t *testing.T) {
	const goroutines, perGoroutine = 4, 2 * stopShards * stopBatch
	const n = goroutines * perGoroutine
	w, err := New(Config{MaxTimers: n})
	if err != nil {
		t.Fatal(err)
	}
	never := func() { t.Error("a stopped timer ran") }
	for round := 1; round <= 3; round++ {
		var wg sync.WaitGroup
		for g := 0; g < goroutines; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				timers := make([]*Timer, perGoroutine)
				for i := range timers {
					timers[i] = mustAfterFunc(t, w, time.Hour, never) // every place taken
				}
				for _, tm := range timers {
					if !tm.Stop() {
						t.Error("Stop of a pending timer = false")
					}
				}
			}()
		}
		wg.Wait()
		if s := w.Stats(); s.Pending != 0 || s.Cancelled != uint64(round*n) {
			t.Fatalf("round %d: Pending %d Cancelled %d, want 0 and %d", round, s.Pending,
				s.Cancelled, round*n)
		}
		if pending, _, err := w.Export(); err != nil || len(pending) != 0 {
			t.Fatalf("round %d: Export lists %d timers (%v), want none", round, len(pending), err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if s := w.Stats(); s.Cancelled != 3*n || s.Discarded != 0 || s.Pending != 0 {
		t.Fatalf("after Close: Cancelled %d Discarded %d Pending %d, want %d, 0, 0",
			s.Cancelled, s.Discarded, s.Pending, 3*n)
	}
	if n := timers.countWheel(w); n != 0 {
		t.Fatalf("%d registry entries live after Close", n)
	}
}
