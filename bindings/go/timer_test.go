package timerwheel

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestAfterFuncNeverFiresEarly(t *testing.T) {
	w := newWheel(t, Config{})
	delays := []time.Duration{time.Millisecond, 1500 * time.Microsecond, 7 * time.Millisecond,
		20*time.Millisecond + time.Nanosecond, 50 * time.Millisecond}
	type result struct {
		want, got time.Duration
	}
	done := make(chan result, len(delays))
	for _, d := range delays {
		d, start := d, time.Now()
		mustAfterFunc(t, w, d, func() { done <- result{d, time.Since(start)} })
	}
	for range delays {
		r := receive(t, done, "a timer to fire")
		if r.got < r.want {
			t.Errorf("timer of %v fired after %v: early", r.want, r.got)
		}
	}
}

func TestZeroAndNegativeDelaysFireSoon(t *testing.T) {
	w := newWheel(t, Config{})
	done := make(chan struct{}, 2)
	mustAfterFunc(t, w, 0, func() { done <- struct{}{} })
	mustAfterFunc(t, w, -time.Hour, func() { done <- struct{}{} })
	receive(t, done, "the zero-delay timer")
	receive(t, done, "the negative-delay timer")
}

func TestNilFuncIsInvalid(t *testing.T) {
	w := newWheel(t, Config{})
	if _, err := w.AfterFunc(time.Second, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("AfterFunc(nil) = %v, want ErrInvalid", err)
	}
	if _, err := w.Every(time.Second, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("Every(nil) = %v, want ErrInvalid", err)
	}
	if _, err := w.Every(0, func() {}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Every(0) = %v, want ErrInvalid", err)
	}
	if _, err := w.EveryFixedDelay(-time.Second, func() {}); !errors.Is(err, ErrInvalid) {
		t.Errorf("EveryFixedDelay(-1s) = %v, want ErrInvalid", err)
	}
}

func TestStopPendingTimer(t *testing.T) {
	w := newWheel(t, Config{})
	tm := mustAfterFunc(t, w, time.Hour, func() {})
	if !tm.Stop() {
		t.Fatal("Stop of a pending timer = false, want true")
	}
	if tm.Stop() {
		t.Fatal("second Stop = true, want false")
	}
}

func TestStoppedTimerNeverRuns(t *testing.T) {
	w := newWheel(t, Config{})
	var ran atomic.Bool
	tm := mustAfterFunc(t, w, 30*time.Millisecond, func() { ran.Store(true) })
	stopped := tm.Stop() // false only if this goroutine stalled for 30ms
	time.Sleep(100 * time.Millisecond)
	if stopped && ran.Load() {
		t.Fatal("a stopped timer ran")
	}
}

func TestStopAfterFireIsFalse(t *testing.T) {
	w := newWheel(t, Config{})
	done := make(chan struct{})
	tm := mustAfterFunc(t, w, 0, func() { close(done) })
	receive(t, done, "the timer to fire")
	eventually(t, "the fired timer to end", func() bool { return w.Stats().Pending == 0 })
	if tm.Stop() {
		t.Fatal("Stop after the timer fired = true, want false")
	}
}

func TestResetPendingTimerMovesIt(t *testing.T) {
	w := newWheel(t, Config{})
	fired := make(chan time.Time, 2)
	tm := mustAfterFunc(t, w, time.Hour, func() { fired <- time.Now() })
	start := time.Now()
	if !tm.Reset(20 * time.Millisecond) {
		t.Fatal("Reset of a pending timer = false, want true")
	}
	if at := receive(t, fired, "the reset timer"); at.Sub(start) < 20*time.Millisecond {
		t.Errorf("reset timer fired after %v, before its 20ms", at.Sub(start))
	}
}

func TestResetFiredTimerSchedulesItAgain(t *testing.T) {
	w := newWheel(t, Config{})
	fired := make(chan struct{}, 2)
	tm := mustAfterFunc(t, w, 0, func() { fired <- struct{}{} })
	receive(t, fired, "the first run")
	eventually(t, "the fired timer to end", func() bool { return w.Stats().Pending == 0 })
	if tm.Reset(time.Millisecond) {
		t.Fatal("Reset of a fired timer = true, want false")
	}
	receive(t, fired, "the run scheduled by Reset")
	eventually(t, "the second run to end", func() bool { return w.Stats().Pending == 0 })
	if tm.Stop() {
		t.Fatal("Stop after the second run = true, want false")
	}
}

func TestResetStoppedTimerSchedulesItAgain(t *testing.T) {
	w := newWheel(t, Config{})
	fired := make(chan struct{}, 1)
	tm := mustAfterFunc(t, w, time.Hour, func() { fired <- struct{}{} })
	tm.Stop()
	if tm.Reset(time.Millisecond) {
		t.Fatal("Reset of a stopped timer = true, want false")
	}
	receive(t, fired, "the run scheduled by Reset")
}

func TestResetFromOwnCallback(t *testing.T) {
	w := newWheel(t, Config{})
	var runs atomic.Int32
	results := make(chan bool, 1)
	var tm *Timer
	ready := make(chan struct{})
	tm = mustAfterFunc(t, w, time.Millisecond, func() {
		<-ready
		if runs.Add(1) == 1 {
			results <- tm.Reset(time.Millisecond)
		}
	})
	close(ready)
	if receive(t, results, "Reset from the callback") {
		t.Error("Reset from the timer's own one-shot callback = true, want false")
	}
	eventually(t, "the second run", func() bool { return runs.Load() == 2 })
}

func TestResetLaterRepeatedlyFiresOnceAfterTheLast(t *testing.T) {
	w := newWheel(t, Config{})
	ran := make(chan time.Time, 2)
	const window = 300 * time.Millisecond // far more than a stall between two Resets
	tm := mustAfterFunc(t, w, window, func() { ran <- time.Now() })
	var last time.Time
	for i := 0; i < 10; i++ {
		last = time.Now()
		if !tm.Reset(window) {
			t.Fatalf("Reset #%d of a pending timer = false, want true", i+1)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if at := receive(t, ran, "the run"); at.Sub(last) < window {
		t.Fatalf("ran %v after the last Reset, before its %v", at.Sub(last), window)
	}
	eventually(t, "the timer to end", func() bool { return w.Stats().Pending == 0 })
	time.Sleep(20 * time.Millisecond)
	if len(ran) != 0 {
		t.Fatal("the timer ran twice")
	}
	s := w.Stats()
	if s.Added != 1 || s.FiredOneShot != 1 || s.Fired != 1 {
		t.Fatalf("Added %d FiredOneShot %d Fired %d, want 1 1 1", s.Added, s.FiredOneShot, s.Fired)
	}
	checkInvariant(t, s)
}

// A timer pushed later and later (its node stays in a slot above level 0 with the new
// deadline) and then brought earlier runs at the earlier time. Every delay but the last is
// an hour or more, so no stall of the test makes a Reset find it fired.
func TestResetEarlierMovesTheTimer(t *testing.T) {
	w := newWheel(t, Config{})
	ran := make(chan struct{}, 1)
	tm := mustAfterFunc(t, w, time.Hour, func() { ran <- struct{}{} })
	for _, later := range []time.Duration{90 * time.Minute, 2 * time.Hour} {
		if !tm.Reset(later) {
			t.Fatalf("Reset(%v) of a pending timer = false, want true", later)
		}
	}
	if !tm.Reset(time.Millisecond) {
		t.Fatal("Reset to an earlier time = false, want true")
	}
	receive(t, ran, "the run moved earlier")
}

// Zero values, made by no Wheel, are inert: a clear result or ErrInvalid, never a panic.
func TestZeroValuesAreInert(t *testing.T) {
	var tm Timer
	if tm.Stop() || tm.Reset(time.Millisecond) {
		t.Fatal("Stop or Reset of a zero Timer = true, want false")
	}
	if stopped, err := tm.StopWait(); stopped || err != nil {
		t.Fatalf("StopWait of a zero Timer = (%v, %v), want (false, nil)", stopped, err)
	}
	var tk Ticker
	tk.Stop()
	if err := tk.Reset(time.Second); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Reset of a zero Ticker = %v, want ErrInvalid", err)
	}
	var g Group
	if g.Stop() {
		t.Fatal("Stop of a zero Group = true, want false")
	}
	if _, err := g.AfterFunc(time.Second, func() {}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("AfterFunc of a zero Group = %v, want ErrInvalid", err)
	}
	if _, err := g.Every(time.Second, func() {}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Every of a zero Group = %v, want ErrInvalid", err)
	}
}
