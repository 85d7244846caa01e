package timerwheel

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestCloseWaitsForRunningCallbacksAndDiscardsPending(t *testing.T) {
	w, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	var finished atomic.Bool
	mustAfterFunc(t, w, 0, func() {
		close(started)
		time.Sleep(100 * time.Millisecond)
		finished.Store(true)
	})
	var ranPending atomic.Int32
	pending := make([]*Timer, 10)
	for i := range pending {
		pending[i] = mustAfterFunc(t, w, time.Hour, func() { ranPending.Add(1) })
	}
	receive(t, started, "the slow callback to start")
	if err := w.Close(); err != nil {
		t.Fatalf("Close = %v, want nil", err)
	}
	if !finished.Load() {
		t.Fatal("Close returned while a callback was still running")
	}
	if n := ranPending.Load(); n != 0 {
		t.Fatalf("%d pending timers ran at Close", n)
	}
	s := w.Stats()
	if s.Discarded != 10 || s.Pending != 0 {
		t.Fatalf("after Close: Discarded %d Pending %d, want 10 and 0", s.Discarded, s.Pending)
	}
	checkInvariant(t, s)
	if pending[0].Stop() {
		t.Fatal("Stop of a discarded timer = true, want false")
	}
}

func TestUseAfterClose(t *testing.T) {
	w, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	tm := mustAfterFunc(t, w, time.Hour, func() {})
	for i := 0; i < 3; i++ {
		if err := w.Close(); err != nil {
			t.Fatalf("Close #%d = %v, want nil", i+1, err)
		}
	}
	if _, err := w.AfterFunc(time.Second, func() {}); !errors.Is(err, ErrClosed) {
		t.Errorf("AfterFunc after Close = %v, want ErrClosed", err)
	}
	if _, err := w.Every(time.Second, func() {}); !errors.Is(err, ErrClosed) {
		t.Errorf("Every after Close = %v, want ErrClosed", err)
	}
	if tm.Stop() {
		t.Error("Stop after Close = true, want false")
	}
	if tm.Reset(time.Second) {
		t.Error("Reset after Close = true, want false")
	}
}

func TestCloseFromOwnCallback(t *testing.T) {
	w, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	var ranPending atomic.Bool // added first: the Close below may run before a later add
	mustAfterFunc(t, w, time.Hour, func() { ranPending.Store(true) })
	closed := make(chan error, 1)
	mustAfterFunc(t, w, 0, func() { closed <- w.Close() })
	if err := receive(t, closed, "Close from the callback"); err != nil {
		t.Fatalf("Close from a callback = %v, want nil", err)
	}
	if _, err := w.AfterFunc(0, func() {}); !errors.Is(err, ErrClosed) {
		t.Fatalf("AfterFunc after Close = %v, want ErrClosed", err)
	}
	eventually(t, "the wheel to be destroyed", func() bool { return w.Stats().Discarded == 1 })
	if ranPending.Load() {
		t.Fatal("a pending timer ran after Close")
	}
}

func TestCloseWhileManyCallbacksRun(t *testing.T) {
	w, err := New(Config{MinWorkers: 2, MaxWorkers: 4})
	if err != nil {
		t.Fatal(err)
	}
	var inside atomic.Int32
	for i := 0; i < 200; i++ {
		_, err := w.Every(time.Millisecond, func() {
			inside.Add(1)
			// Callbacks keep using the wheel while it closes.
			if tm, err := w.AfterFunc(time.Millisecond, func() {}); err == nil {
				tm.Stop()
			}
			inside.Add(-1)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(30 * time.Millisecond)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := inside.Load(); n != 0 {
		t.Fatalf("%d callbacks still running after Close returned", n)
	}
	checkInvariant(t, w.Stats())
}

func TestCloseWhileGoroutinesUseTheWheel(t *testing.T) {
	w, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				tm, err := w.AfterFunc(time.Millisecond, func() {})
				if err != nil {
					if !errors.Is(err, ErrClosed) {
						t.Error(err)
					}
					continue
				}
				tm.Reset(2 * time.Millisecond)
				tm.Stop()
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	checkInvariant(t, w.Stats())
	if n := liveEntries(w); n != 0 {
		t.Fatalf("%d registry entries live after Close", n)
	}
}

// Close from a periodic func (on a library thread) while thousands of one-shot fires are
// queued for the deliverers: each timer counts once in the final Stats, and FiredOneShot
// is the funcs that ran.
func TestCloseFromAPeriodicFuncCountsQueuedFiresOnce(t *testing.T) {
	for _, cfg := range []Config{{}, {MaxWorkers: -1}} {
		for trial := 0; trial < 8; trial++ {
			w, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			const n = 4000
			var ran, periodicRuns atomic.Int64
			closed := make(chan struct{})
			for i := 0; i < n; i++ {
				mustAfterFunc(t, w, time.Duration(i%20)*250*time.Microsecond, func() {
					ran.Add(1)
					time.Sleep(20 * time.Microsecond)
				})
			}
			if _, err := w.Every(time.Millisecond, func() {
				if periodicRuns.Add(1) == 3 {
					_ = w.Close()
					close(closed)
				}
			}); err != nil {
				t.Fatal(err)
			}
			receive(t, closed, "Close from the periodic func")
			time.Sleep(100 * time.Millisecond) // the queued fires are taken and skipped
			s := w.Stats()
			checkInvariant(t, s)
			if s.Added != n+1 || s.FiredOneShot != uint64(ran.Load()) {
				t.Fatalf("%+v trial %d: Added %d FiredOneShot %d Discarded %d, want %d added, "+
					"%d one-shots run", cfg, trial, s.Added, s.FiredOneShot, s.Discarded, n+1, ran.Load())
			}
		}
	}
}

// Periodic timers closed from outside: Fired after Close is exactly the runs that started
// (the library's last snapshot may miss a run that starts after it, or count one whose
// func Close then skips).
func TestFiredAfterCloseIsTheRunsThatStarted(t *testing.T) {
	for _, cfg := range []Config{{}, {SlowCallback: time.Hour}} {
		for trial := 0; trial < 8; trial++ {
			w, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			const n = 500
			var runs atomic.Int64
			for i := 0; i < n; i++ {
				if _, err := w.Every(time.Millisecond, func() { runs.Add(1) }); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(30 * time.Millisecond)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if s := w.Stats(); s.Fired != uint64(runs.Load()) || s.Discarded != n {
				t.Fatalf("%+v trial %d: after Close Fired %d Discarded %d, want the %d runs and %d",
					cfg, trial, s.Fired, s.Discarded, runs.Load(), n)
			}
		}
	}
}

func TestGroupStopAfterCloseIsFalse(t *testing.T) {
	w, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := w.Group()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if g.Stop() {
		t.Fatal("Group.Stop after the wheel's Close = true, want false: Close closed the group")
	}
}
