package timerwheel

import (
	"errors"
	"math/rand"
	"sync"
	"testing"
	"time"
)

// nothingOn fails the test if ch holds or soon receives a value.
func nothingOn(t *testing.T, ch <-chan time.Time, wait time.Duration, what string) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("%s: received %v", what, v)
	case <-time.After(wait):
	}
}

func mustNewTimer(t *testing.T, w *Wheel, d time.Duration) *Timer {
	t.Helper()
	tm, err := w.NewTimer(d)
	if err != nil {
		t.Fatalf("NewTimer(%v): %v", d, err)
	}
	return tm
}

func TestNewTimerSendsOnceAfterItsDelay(t *testing.T) {
	w := newWheel(t, Config{})
	start := time.Now()
	tm := mustNewTimer(t, w, 20*time.Millisecond)
	if v := receive(t, tm.C, "the timer's value"); v.Sub(start) < 20*time.Millisecond {
		t.Fatalf("value sent %v after NewTimer, before its 20ms", v.Sub(start))
	}
	nothingOn(t, tm.C, 30*time.Millisecond, "a second value of a one-shot")
	if tm.Stop() {
		t.Fatal("Stop after the value was received = true, want false")
	}
	if af := mustAfterFunc(t, w, time.Hour, func() {}); af.C != nil {
		t.Fatal("an AfterFunc timer has a channel")
	}
}

// Go 1.23: a value sent but not received yet still counts as the timer running; Stop
// takes it back and returns true.
func TestNewTimerStopAfterSendTakesTheValueBack(t *testing.T) {
	w := newWheel(t, Config{})
	tm := mustNewTimer(t, w, 0)
	eventually(t, "the value to be sent", func() bool { return len(tm.C) == 1 })
	if !tm.Stop() {
		t.Fatal("Stop with the value unreceived = false, want true")
	}
	nothingOn(t, tm.C, 20*time.Millisecond, "receive after Stop")
	// Stop returned true: Stats counts a stopped timer, not one that fired.
	if s := w.Stats(); s.Cancelled != 1 || s.FiredOneShot != 0 {
		t.Fatalf("Stats after Stop took the value back: Cancelled %d FiredOneShot %d, want 1 and 0",
			s.Cancelled, s.FiredOneShot)
	}
}

func TestNewTimerStopBeforeFiring(t *testing.T) {
	w := newWheel(t, Config{})
	tm := mustNewTimer(t, w, 20*time.Millisecond)
	if !tm.Stop() {
		t.Fatal("Stop of a pending timer = false, want true")
	}
	nothingOn(t, tm.C, 60*time.Millisecond, "receive after Stop")
	if tm.Stop() {
		t.Fatal("second Stop = true, want false")
	}
}

func TestNewTimerResetDropsTheStaleValue(t *testing.T) {
	w := newWheel(t, Config{})
	tm := mustNewTimer(t, w, 0)
	eventually(t, "the value to be sent", func() bool { return len(tm.C) == 1 })
	reset := time.Now()
	if !tm.Reset(30 * time.Millisecond) {
		t.Fatal("Reset with the value unreceived = false, want true")
	}
	if v := receive(t, tm.C, "the value after Reset"); v.Sub(reset) < 30*time.Millisecond {
		t.Fatalf("received a value %v after Reset, before its 30ms: a stale one", v.Sub(reset))
	}
	// Reset returned true: one timer, moved, whose one value was received.
	if s := w.Stats(); s.Added != 1 || s.FiredOneShot != 1 || s.Cancelled != 0 {
		t.Fatalf("Stats after Reset took the value back: Added %d FiredOneShot %d Cancelled %d, "+
			"want 1, 1, 0", s.Added, s.FiredOneShot, s.Cancelled)
	}
	if tm.Reset(time.Millisecond) {
		t.Fatal("Reset after the value was received = true, want false")
	}
	receive(t, tm.C, "the value after the second Reset")
}

// In the manner of the standard library's TestAdjustTimers: Reset and Stop at random
// moments, some while a send is under way; a value received after a Reset is never one
// from before it, and nothing is received after a Stop.
func TestNewTimerNoStaleValueUnderRandomResetAndStop(t *testing.T) {
	w := newWheel(t, Config{MaxWorkers: 4})
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed))
			tm := mustNewTimer(t, w, time.Millisecond)
			for i := 0; i < 200; i++ {
				time.Sleep(time.Duration(rng.Intn(1500)) * time.Microsecond)
				if rng.Intn(3) == 0 {
					tm.Stop()
					select {
					case v := <-tm.C:
						t.Errorf("received %v after Stop returned", v)
						return
					default:
					}
					continue
				}
				d := time.Duration(rng.Intn(2000)) * time.Microsecond
				reset := time.Now()
				tm.Reset(d)
				v := receive(t, tm.C, "the value after Reset")
				if v.Sub(reset) < d {
					t.Errorf("value %v after Reset(%v): a stale one", v.Sub(reset), d)
					return
				}
			}
			tm.Stop()
		}(int64(g))
	}
	wg.Wait()
	eventually(t, "nothing pending", func() bool { return w.Stats().Pending == 0 })
	checkInvariant(t, w.Stats())
}

// A send under way (its run began, the value not yet sent) when Stop comes is dropped,
// and Stop returns true, as Go 1.23's does for a send in progress.
func TestNewTimerSendUnderWayIsDropped(t *testing.T) {
	w := newWheel(t, Config{})
	tm := mustNewTimer(t, w, time.Hour)
	ch := tm.x.ch
	ch.mu.Lock() // as a Stop that has begun: the run's send waits for it
	tm.resetFunc(0)
	eventually(t, "the run to begin its send", func() bool { return ch.inflight.Load() == 1 })
	stopped := ch.stopLocked(tm)
	ch.mu.Unlock()
	if !stopped {
		t.Fatal("Stop during a send under way = false, want true")
	}
	nothingOn(t, tm.C, 30*time.Millisecond, "the send under way at Stop")
	if s := w.Stats(); s.Cancelled != 1 || s.FiredOneShot != 0 {
		t.Fatalf("Stats after Stop dropped the send: Cancelled %d FiredOneShot %d, want 1 and 0",
			s.Cancelled, s.FiredOneShot)
	}
}

func TestTickerTicksAndStops(t *testing.T) {
	w := newWheel(t, Config{})
	start := time.Now()
	tk, err := w.NewTicker(5 * time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if v := receive(t, tk.C, "a tick"); v.Sub(start) < time.Duration(i)*5*time.Millisecond {
			t.Fatalf("tick %d at %v, before its point", i, v.Sub(start))
		}
	}
	time.Sleep(12 * time.Millisecond) // a tick waits in the buffer, later ones are dropped
	tk.Stop()
	nothingOn(t, tk.C, 30*time.Millisecond, "a tick after Stop")
	if s := w.Stats(); s.Pending != 0 {
		t.Fatalf("Pending %d after Stop", s.Pending)
	}
}

func TestTickerResetChangesThePeriod(t *testing.T) {
	w := newWheel(t, Config{})
	tk, err := w.NewTicker(time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Stop()
	receive(t, tk.C, "a fast tick")
	time.Sleep(5 * time.Millisecond) // a tick waits in the buffer
	reset := time.Now()
	if err := tk.Reset(40 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		if v := receive(t, tk.C, "a slow tick"); v.Sub(reset) < time.Duration(i)*40*time.Millisecond {
			t.Fatalf("tick %d %v after Reset(40ms): stale or early", i, v.Sub(reset))
		}
	}
	if err := tk.Reset(0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Reset(0) = %v, want ErrInvalid", err)
	}
	if _, err := w.NewTicker(-time.Second); !errors.Is(err, ErrInvalid) {
		t.Fatalf("NewTicker(-1s) = %v, want ErrInvalid", err)
	}
}

func TestChannelTimersOnAClosedWheel(t *testing.T) {
	w := newWheel(t, Config{})
	tm := mustNewTimer(t, w, time.Hour)
	tk, err := w.NewTicker(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	if _, err := w.NewTimer(time.Millisecond); !errors.Is(err, ErrClosed) {
		t.Fatalf("NewTimer after Close = %v, want ErrClosed", err)
	}
	if tm.Reset(time.Millisecond) {
		t.Fatal("Reset after Close = true")
	}
	if err := tk.Reset(time.Millisecond); !errors.Is(err, ErrClosed) {
		t.Fatalf("Ticker.Reset after Close = %v, want ErrClosed", err)
	}
	tk.Stop()
	nothingOn(t, tm.C, 20*time.Millisecond, "a value after Close")
}

// Reset of a NewTimer that has not fired is one timer moved (a delete and an add in the
// library), as for AfterFunc's timers; so is a Ticker's Reset.
func TestChannelTimerResetCountsOneTimer(t *testing.T) {
	w := newWheel(t, Config{})
	tm := mustNewTimer(t, w, time.Hour)
	if !tm.Reset(time.Hour) {
		t.Fatal("Reset of a pending NewTimer = false, want true")
	}
	tk, err := w.NewTicker(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := tk.Reset(time.Hour); err != nil {
		t.Fatal(err)
	}
	if s := w.Stats(); s.Added != 2 || s.Cancelled != 0 || s.Pending != 2 {
		t.Fatalf("Stats after the Resets: Added %d Cancelled %d Pending %d, want 2, 0, 2",
			s.Added, s.Cancelled, s.Pending)
	}
}
