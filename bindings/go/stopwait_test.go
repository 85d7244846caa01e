package timerwheel

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// stopWaitAsync runs StopWait on another goroutine; its result arrives when it returns.
func stopWaitAsync(tm *Timer) <-chan bool {
	done := make(chan bool, 1)
	go func() {
		stopped, _ := tm.StopWait()
		done <- stopped
	}()
	return done
}

// notYet fails the test if ch delivers within a short while.
func notYet[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case <-ch:
		t.Fatalf("%s returned while the func was still running", what)
	case <-time.After(50 * time.Millisecond):
	}
}

func TestStopWaitWaitsForTheRunningFunc(t *testing.T) {
	for _, periodic := range []bool{false, true} {
		w := newWheel(t, Config{})
		started, release := make(chan struct{}, 1), make(chan struct{})
		unblock := sync.OnceFunc(func() { close(release) })
		defer unblock() // before the wheel's Close, also when the test fails
		var running atomic.Bool
		f := func() {
			running.Store(true)
			select {
			case started <- struct{}{}:
			default:
			}
			<-release
			running.Store(false)
		}
		var tm *Timer
		var err error
		if periodic {
			tm, err = w.Every(time.Millisecond, f)
		} else {
			tm, err = w.AfterFunc(0, f)
		}
		if err != nil {
			t.Fatal(err)
		}
		receive(t, started, "the func to start")
		done := stopWaitAsync(tm)
		notYet(t, done, "StopWait")
		unblock()
		stopped := receive(t, done, "StopWait")
		if running.Load() {
			t.Fatal("StopWait returned while the func was running")
		}
		if stopped != periodic {
			t.Fatalf("periodic %v: StopWait = %v, want %v", periodic, stopped, periodic)
		}
	}
}

// A one-shot reset while its func runs has two runs of one Timer: StopWait stops the new
// one and waits for the old.
func TestStopWaitAfterResetDuringARun(t *testing.T) {
	w := newWheel(t, Config{})
	started, release := make(chan struct{}, 2), make(chan struct{})
	unblock := sync.OnceFunc(func() { close(release) })
	defer unblock()
	var runs atomic.Int32
	tm := mustAfterFunc(t, w, 0, func() {
		runs.Add(1)
		started <- struct{}{}
		<-release
	})
	receive(t, started, "the first run")
	if tm.Reset(time.Hour) {
		t.Fatal("Reset of a timer whose func started = true, want false")
	}
	done := stopWaitAsync(tm)
	notYet(t, done, "StopWait")
	unblock()
	if !receive(t, done, "StopWait") {
		t.Fatal("StopWait of the timer armed again by Reset = false, want true")
	}
	if runs.Load() != 1 {
		t.Fatalf("%d runs, want 1", runs.Load())
	}
}

func TestStopWaitFromOwnFuncIsBusyAndChangesNothing(t *testing.T) {
	w := newWheel(t, Config{})
	type result struct {
		stopped bool
		err     error
	}
	results := make(chan result, 1)
	var runs atomic.Int32
	var tm *Timer
	ready := make(chan struct{})
	tm, err := w.Every(time.Millisecond, func() {
		<-ready
		if runs.Add(1) == 1 {
			stopped, err := tm.StopWait()
			results <- result{stopped, err}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	close(ready)
	r := receive(t, results, "StopWait from the timer's own func")
	if r.stopped || !errors.Is(r.err, ErrBusy) {
		t.Fatalf("StopWait from its own func = %v, %v; want false, ErrBusy", r.stopped, r.err)
	}
	eventually(t, "the timer to go on", func() bool { return runs.Load() >= 3 })
	if stopped, err := tm.StopWait(); !stopped || err != nil {
		t.Fatalf("StopWait from outside = %v, %v; want true, nil", stopped, err)
	}
}

// StopWait from the func of another timer waits like any other caller; from a func of
// the timer on a virtual clock's Advance too.
func TestStopWaitFromAnotherTimersFunc(t *testing.T) {
	w := newWheel(t, Config{MaxWorkers: 4})
	started, release := make(chan struct{}), make(chan struct{})
	unblock := sync.OnceFunc(func() { close(release) })
	defer unblock()
	slow := mustAfterFunc(t, w, 0, func() { close(started); <-release })
	receive(t, started, "the slow func")
	done := make(chan error, 1)
	mustAfterFunc(t, w, 0, func() {
		_, err := slow.StopWait()
		done <- err
	})
	notYet(t, done, "StopWait from another timer's func")
	unblock()
	if err := receive(t, done, "StopWait"); err != nil {
		t.Fatalf("StopWait from another timer's func: %v", err)
	}
}

func TestStopWaitOnVirtualClockFromOwnFunc(t *testing.T) {
	w := newVirtualWheel(t)
	var tm *Timer
	var err error
	var got error
	tm, err = w.AfterFunc(time.Second, func() { _, got = tm.StopWait() })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Advance(time.Second); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(got, ErrBusy) {
		t.Fatalf("StopWait from its own func inside Advance: %v, want ErrBusy", got)
	}
	if stopped, err := tm.StopWait(); stopped || err != nil {
		t.Fatalf("StopWait after the run = %v, %v; want false, nil", stopped, err)
	}
}

// Two runs of one one-shot at once (Reset while its func runs, and the new run starts):
// StopWait waits for both, and from either of them it is busy.
func TestStopWaitWithTwoRunsAtOnce(t *testing.T) {
	w := newWheel(t, Config{MaxWorkers: 4})
	started, release := make(chan struct{}, 2), make(chan struct{})
	unblock := sync.OnceFunc(func() { close(release) })
	defer unblock()
	var running atomic.Int32
	busy := make(chan error, 2)
	var tm *Timer
	tm = mustAfterFunc(t, w, 0, func() {
		running.Add(1)
		started <- struct{}{}
		<-release
		_, err := tm.StopWait()
		busy <- err
		running.Add(-1)
	})
	receive(t, started, "the first run")
	tm.Reset(0)
	receive(t, started, "the second run")
	done := stopWaitAsync(tm)
	notYet(t, done, "StopWait")
	unblock()
	receive(t, done, "StopWait")
	if n := running.Load(); n != 0 {
		t.Fatalf("StopWait returned with %d runs under way", n)
	}
	for i := 0; i < 2; i++ {
		if err := receive(t, busy, "StopWait from a run"); !errors.Is(err, ErrBusy) {
			t.Fatalf("StopWait from run %d: %v, want ErrBusy", i+1, err)
		}
	}
}

// hourlyTimerAndHandle makes a periodic timer and returns it with the handle of its C
// timer, whose late callbacks a test replays with fire, and the count of its runs.
func hourlyTimerAndHandle(t *testing.T) (*Wheel, *Timer, uintptr, *atomic.Int32) {
	w := newWheel(t, Config{})
	runs := new(atomic.Int32)
	tm, err := w.Every(time.Hour, func() { runs.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return w, tm, tm.handle, runs
}

// The callback of a periodic run that the library started before Stop can reach the Timer
// after Stop has returned (its thread was descheduled on the way): the func must not start
// then, or StopWait, which found no run under way, would return before it.
func TestPeriodicRunReachingTheTimerAfterStopDoesNotStart(t *testing.T) {
	_, tm, h, runs := hourlyTimerAndHandle(t)
	if stopped, err := tm.StopWait(); !stopped || err != nil {
		t.Fatalf("StopWait of a live periodic timer = (%v, %v), want (true, nil)", stopped, err)
	}
	fire(tm, h) // what twgoFire does for that run, late
	if n := runs.Load(); n != 0 {
		t.Fatalf("the func ran %d times after StopWait returned", n)
	}
}

// Many periodic timers firing every millisecond, each stopped by StopWait at a random
// moment: once StopWait has returned, no run of that timer is under way or starts, and
// Stats counts as fired the runs that started, not those skipped.
func TestNoPeriodicRunStartsAfterStopWaitReturns(t *testing.T) {
	w := newWheel(t, Config{})
	const timerCount, stopsEach = 64, 20
	var wg sync.WaitGroup
	var late, runs atomic.Int32
	for i := 0; i < timerCount; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			var returned, running atomic.Bool
			tm, err := w.Every(time.Millisecond, func() {
				runs.Add(1)
				running.Store(true)
				if returned.Load() {
					late.Add(1)
				}
				time.Sleep(time.Duration(i%4) * 100 * time.Microsecond)
				running.Store(false)
			})
			if err != nil {
				t.Error(err)
				return
			}
			for k := 0; k < stopsEach; k++ {
				time.Sleep(time.Duration(i%7) * 300 * time.Microsecond)
				if _, err := tm.StopWait(); err != nil {
					t.Error(err)
				}
				returned.Store(true)
				if running.Load() {
					late.Add(1)
				}
				time.Sleep(3 * time.Millisecond) // a late run would start meanwhile
				returned.Store(false)
				tm.Reset(time.Millisecond)
			}
			_, _ = tm.StopWait()
		}(i)
	}
	wg.Wait()
	if n := late.Load(); n != 0 {
		t.Fatalf("%d runs were under way or started after StopWait returned", n)
	}
	if s := w.Stats(); s.Fired != uint64(runs.Load()) {
		t.Fatalf("Stats().Fired = %d, want the %d runs that started", s.Fired, runs.Load())
	}
}

// Reset moves a periodic timer's run that was due, as Stop stops it: a run that the library
// started before Reset, whose callback reaches the Timer after Reset returned true, does
// not start. Stats counts one timer, neither stopped nor added twice.
func TestPeriodicRunReachingTheTimerAfterResetDoesNotStart(t *testing.T) {
	w, tm, h, runs := hourlyTimerAndHandle(t)
	if !tm.Reset(time.Hour) {
		t.Fatal("Reset of a live periodic timer = false, want true")
	}
	fire(tm, h) // what twgoFire does for a run started before the Reset, late
	if n := runs.Load(); n != 0 {
		t.Fatalf("the func ran %d times after Reset moved it", n)
	}
	if s := w.Stats(); s.Added != 1 || s.Cancelled != 0 || s.Pending != 1 || s.Fired != 0 {
		t.Fatalf("Stats after a Reset: Added %d Cancelled %d Pending %d Fired %d, want 1, 0, 1, 0",
			s.Added, s.Cancelled, s.Pending, s.Fired)
	}
}
