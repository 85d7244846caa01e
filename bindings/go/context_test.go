package timerwheel

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

func TestAfterFuncContextCancelStopsTheTimer(t *testing.T) {
	w := newWheel(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	var ran atomic.Bool
	// Long enough that no stall of this goroutine between the add and cancel lets it fire
	// (with 50 ms, a stall that long did); the sleep below goes past it.
	const delay = 250 * time.Millisecond
	tm, err := w.AfterFuncContext(ctx, delay, func() { ran.Store(true) })
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	eventually(t, "the cancelled context to stop the timer", func() bool {
		return w.Stats().Pending == 0
	})
	time.Sleep(delay + 50*time.Millisecond)
	if ran.Load() {
		t.Fatal("the timer ran after its context was cancelled")
	}
	if tm.Stop() {
		t.Fatal("Stop after the context stopped the timer = true, want false")
	}
	if s := w.Stats(); s.Cancelled != 1 || s.Fired != 0 {
		t.Fatalf("Cancelled %d Fired %d, want 1 0", s.Cancelled, s.Fired)
	}
}

func TestAfterFuncContextAlreadyDoneAddsNothing(t *testing.T) {
	w := newWheel(t, Config{})
	cause := errors.New("session hung up")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	if _, err := w.AfterFuncContext(ctx, time.Millisecond, func() {}); !errors.Is(err, cause) {
		t.Fatalf("AfterFuncContext on a done context: %v, want its cause", err)
	}
	var noContext context.Context
	if _, err := w.AfterFuncContext(noContext, time.Millisecond, func() {}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("AfterFuncContext(nil ctx): %v, want ErrInvalid", err)
	}
	if s := w.Stats(); s.Added != 0 {
		t.Fatalf("Added %d after refused adds, want 0", s.Added)
	}
}

func TestAfterFuncContextResetOfAPendingTimerAfterDoneIsFalse(t *testing.T) {
	w := newWheel(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	tm, err := w.AfterFuncContext(ctx, time.Hour, func() {})
	if err != nil {
		t.Fatal(err)
	}
	tm.mu.Lock() // holds back the Stop that the context's done starts
	cancel()
	tm.mu.Unlock()
	if tm.Reset(time.Millisecond) {
		t.Fatal("Reset once the context is done = true, want false")
	}
	eventually(t, "the context to stop the timer", func() bool { return w.Stats().Pending == 0 })
}

func TestAfterFuncContextResetAfterDoneArmsNothing(t *testing.T) {
	w := newWheel(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{}, 2)
	tm, err := w.AfterFuncContext(ctx, 0, func() { ran <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	receive(t, ran, "the first run")
	cancel()
	if tm.Reset(time.Millisecond) {
		t.Fatal("Reset of a fired timer = true, want false")
	}
	time.Sleep(50 * time.Millisecond)
	if len(ran) != 0 || w.Stats().Added != 1 {
		t.Fatalf("Reset after the context was done armed the timer again (runs %d, added %d)",
			len(ran), w.Stats().Added)
	}
}

// A timer that fired or was stopped lets go of its context: a long-lived context does not
// collect an entry per timer, and no goroutine waits per timer.
func TestAfterFuncContextReleasesTheContext(t *testing.T) {
	w := newWheel(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	before := runtime.NumGoroutine()
	const n = 1000
	fired := make(chan struct{}, n)
	timers := make([]*Timer, 0, 2*n)
	for i := 0; i < n; i++ {
		a, err := w.AfterFuncContext(ctx, 0, func() { fired <- struct{}{} })
		if err != nil {
			t.Fatal(err)
		}
		b, err := w.AfterFuncContext(ctx, time.Hour, func() {})
		if err != nil {
			t.Fatal(err)
		}
		timers = append(timers, a, b)
	}
	if extra := runtime.NumGoroutine() - before; extra > 10 {
		t.Fatalf("%d goroutines more with %d context timers pending", extra, n)
	}
	for i := 0; i < n; i++ {
		receive(t, fired, "the short timers")
	}
	for i := 1; i < len(timers); i += 2 {
		timers[i].Stop()
	}
	eventually(t, "every timer to end", func() bool { return w.Stats().Pending == 0 })
	for _, tm := range timers {
		tm.mu.Lock()
		watching := tm.x.ctxStop != nil
		tm.mu.Unlock()
		if watching {
			t.Fatal("a fired or stopped timer still watches its context")
		}
	}
}

func TestEveryContextStopsWhenDone(t *testing.T) {
	w := newWheel(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	var runs atomic.Int64
	if _, err := w.EveryContext(ctx, 2*time.Millisecond, func() {
		if runs.Add(1) == 3 {
			cancel()
		}
	}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the context to stop the ticks", func() bool { return w.Stats().Pending == 0 })
	settled := runs.Load()
	time.Sleep(30 * time.Millisecond)
	if runs.Load() != settled || settled < 3 {
		t.Fatalf("runs went from %d to %d after the context was done", settled, runs.Load())
	}
	if _, err := w.EveryContext(ctx, 0, func() {}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("EveryContext(0): %v, want ErrInvalid", err)
	}
}

// Contexts cancelled while their timers fire, stop and reset, under -race: every timer
// runs at most once per arm, and nothing is left pending.
func TestAfterFuncContextRacesWithFiring(t *testing.T) {
	w := newWheel(t, Config{MaxWorkers: 4})
	var runs atomic.Int64
	for i := 0; i < 500; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		tm, err := w.AfterFuncContext(ctx, time.Duration(i%3)*time.Millisecond,
			func() { runs.Add(1) })
		if err != nil {
			t.Fatal(err)
		}
		go cancel()
		if i%2 == 0 {
			tm.Reset(time.Millisecond)
		}
	}
	// A fired one-shot is counted when its callback starts, a run when its func does.
	eventually(t, "every timer to fire or stop, each fired one run", func() bool {
		s := w.Stats()
		return s.Pending == 0 && uint64(runs.Load()) == s.FiredOneShot
	})
	checkInvariant(t, w.Stats())
}

// A context timer armed again by Reset after it fired watches its context again.
func TestAfterFuncContextResetAfterFiringWatchesAgain(t *testing.T) {
	w := newWheel(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{}, 2)
	tm, err := w.AfterFuncContext(ctx, 0, func() { ran <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	receive(t, ran, "the first run")
	eventually(t, "the fired timer to end", func() bool { return w.Stats().Pending == 0 })
	tm.Reset(time.Hour)
	cancel()
	eventually(t, "the context to stop the timer armed again", func() bool {
		return w.Stats().Pending == 0
	})
	if s := w.Stats(); s.Cancelled != 1 {
		t.Fatalf("Cancelled %d, want 1", s.Cancelled)
	}
}
