package timerwheel

import (
	"errors"
	"math/rand"
	"sync/atomic"
	"testing"
	"time"
)

func newGroup(t *testing.T, w *Wheel) *Group {
	t.Helper()
	g, err := w.Group()
	if err != nil {
		t.Fatalf("Group: %v", err)
	}
	return g
}

func TestGroupStopStopsEveryTimerAndClosesTheGroup(t *testing.T) {
	w := newWheel(t, Config{MaxWorkers: 2})
	g := newGroup(t, w)
	fired := make(chan struct{}, 1)
	if _, err := g.AfterFunc(0, func() { fired <- struct{}{} }); err != nil {
		t.Fatal(err)
	}
	receive(t, fired, "the group's first timer")
	// A session whose only timer fired adds the next.
	idle, err := g.AfterFunc(time.Hour, func() {})
	if err != nil {
		t.Fatal(err)
	}
	charge, err := g.Every(time.Hour, func() {})
	if err != nil {
		t.Fatal(err)
	}
	if !g.Stop() {
		t.Fatal("Stop of an open group returned false")
	}
	if idle.Stop() || charge.Stop() {
		t.Fatal("a timer of the group was still pending after its Stop")
	}
	if g.Stop() {
		t.Fatal("a second Stop returned true")
	}
	if _, err := g.AfterFunc(0, func() {}); !errors.Is(err, ErrGroupClosed) {
		t.Fatalf("AfterFunc on a stopped group: %v, want ErrGroupClosed", err)
	}
	s := w.Stats()
	checkInvariant(t, s)
	if s.Pending != 0 || s.Cancelled != 2 {
		t.Fatalf("pending %d cancelled %d, want 0 and 2", s.Pending, s.Cancelled)
	}
}

func TestGroupStopFromItsOwnFunc(t *testing.T) {
	w := newWheel(t, Config{MaxWorkers: 2})
	g := newGroup(t, w)
	var runs atomic.Int64
	stopped := make(chan bool, 1)
	if _, err := g.Every(time.Millisecond, func() {
		if runs.Add(1) == 1 {
			stopped <- g.Stop()
		}
	}); err != nil {
		t.Fatal(err)
	}
	if !receive(t, stopped, "Stop from the group's own func") {
		t.Fatal("Stop from its own func returned false")
	}
	time.Sleep(20 * time.Millisecond)
	if n := runs.Load(); n != 1 {
		t.Fatalf("%d runs after the group stopped itself, want 1", n)
	}
}

// A timer that fired, was pruned from the group's set and is armed again by Reset is
// stopped with the group.
func TestGroupStopsATimerResetAfterItFired(t *testing.T) {
	w := newWheel(t, Config{MaxWorkers: 2})
	g := newGroup(t, w)
	var fired atomic.Int64
	first, err := g.AfterFunc(0, func() { fired.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if _, err := g.AfterFunc(0, func() { fired.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "every timer fired", func() bool { return fired.Load() == 101 })
	if _, err := g.AfterFunc(time.Hour, func() {}); err != nil { // prunes the fired ones
		t.Fatal(err)
	}
	if first.Reset(time.Hour) {
		t.Fatal("Reset of a fired timer returned true")
	}
	g.Stop()
	if first.Stop() {
		t.Fatal("the timer armed again by Reset survived the group's Stop")
	}
	eventually(t, "nothing pending", func() bool { return w.Stats().Pending == 0 })
}

// One goroutine adds timers to a group while another stops it: every timer added is
// stopped or fired, none stays pending, and adds after the Stop are refused.
func TestGroupAddsRacingStop(t *testing.T) {
	w := newWheel(t, Config{MaxWorkers: 2})
	for round := 0; round < 50; round++ {
		g := newGroup(t, w)
		added := make(chan []*Timer)
		go func() {
			var timers []*Timer
			for {
				tm, err := g.AfterFunc(time.Duration(rand.Intn(3))*time.Millisecond, func() {})
				if errors.Is(err, ErrGroupClosed) {
					added <- timers
					return
				}
				if err != nil {
					t.Errorf("AfterFunc: %v", err)
					added <- timers
					return
				}
				timers = append(timers, tm)
			}
		}()
		time.Sleep(time.Duration(rand.Intn(2000)) * time.Microsecond)
		g.Stop()
		for _, tm := range receive(t, added, "the adder") {
			if tm.Stop() {
				t.Fatal("a timer added before the group's Stop was still pending")
			}
		}
	}
	eventually(t, "nothing pending", func() bool { return w.Stats().Pending == 0 })
	checkInvariant(t, w.Stats())
}
