package timerwheel

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// start is 2024-01-01T00:00:00Z.
var start = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func newVirtualWheel(t *testing.T) *Wheel {
	t.Helper()
	return newWheel(t, Config{VirtualStart: start})
}

// since is the virtual time since start.
func since(w *Wheel) time.Duration {
	return w.Now().Sub(start)
}

func mustAdvance(t *testing.T, w *Wheel, d time.Duration, want int) {
	t.Helper()
	if ran, err := w.Advance(d); ran != want || err != nil {
		t.Fatalf("Advance(%v) = %d, %v; want %d, nil", d, ran, err, want)
	}
}

func TestVirtualFixedRateOverAYearRunsAtItsExactPoints(t *testing.T) {
	w := newVirtualWheel(t)
	// Not a multiple of the 1ms tick: each point rounds up on its own, none drifts.
	period := 90*time.Minute + 250*time.Microsecond
	var runs []time.Duration
	if _, err := w.Every(period, func() { runs = append(runs, since(w)) }); err != nil {
		t.Fatal(err)
	}
	year := 365 * 24 * time.Hour
	points := int(year / period)
	mustAdvance(t, w, year, points)
	for n, ranAt := range runs {
		point := time.Duration(n+1) * period
		if onTick := point.Round(time.Millisecond); onTick < point {
			point = onTick + time.Millisecond
		} else {
			point = onTick
		}
		if ranAt != point {
			t.Fatalf("run %d at %v, want %v", n+1, ranAt, point)
		}
	}
	if since(w) != year {
		t.Fatalf("the clock is at %v, want %v", since(w), year)
	}
}

// simulate runs a billing-like program with seeded delays for 30 virtual minutes.
func simulate(t *testing.T, seed uint64) []string {
	w := newVirtualWheel(t)
	var order []string
	for session := 0; session < 20; session++ {
		seed = seed*6364136223846793005 + 1442695040888963407
		first := time.Duration(seed>>33%60000) * time.Millisecond
		followUp := time.Duration(seed>>20%5000) * time.Millisecond
		charge := func() {
			order = append(order, fmt.Sprintf("charge %d at %v", session, since(w)))
			_, _ = w.AfterFunc(followUp, func() {
				order = append(order, fmt.Sprintf("follow-up %d at %v", session, since(w)))
			})
		}
		_, _ = w.AfterFunc(first, func() {
			charge()
			_, _ = w.Every(time.Minute, charge)
		})
	}
	if _, err := w.Advance(30 * time.Minute); err != nil {
		t.Fatal(err)
	}
	return order
}

func TestVirtualSameProgramSameOrder(t *testing.T) {
	first := simulate(t, 7)
	if len(first) < 1000 {
		t.Fatalf("%d runs", len(first))
	}
	if again := simulate(t, 7); !reflect.DeepEqual(first, again) {
		t.Fatal("two runs of the same program differ")
	}
	if other := simulate(t, 8); reflect.DeepEqual(first, other) {
		t.Fatal("the seed does not matter")
	}
}

func TestVirtualTimersAddedByCallbacksRunInTheSameAdvance(t *testing.T) {
	w := newVirtualWheel(t)
	var log []string
	record := func(name string) func() {
		return func() { log = append(log, fmt.Sprintf("%s %v", name, since(w))) }
	}
	_, _ = w.AfterFunc(10*time.Second, func() {
		record("first")()
		_, _ = w.AfterFunc(0, record("now"))
		_, _ = w.AfterFunc(5*time.Second, record("soon"))
		_, _ = w.AfterFunc(15*time.Second, record("beyond"))
	})
	mustAdvance(t, w, 20*time.Second, 3)
	want := []string{"first 10s", "now 10s", "soon 15s"}
	if !reflect.DeepEqual(log, want) {
		t.Fatalf("ran %v, want %v", log, want)
	}
	if ran, err := w.AdvanceToNext(); ran != 1 || err != nil || since(w) != 25*time.Second {
		t.Fatalf("AdvanceToNext = %d, %v at %v", ran, err, since(w))
	}
	if ran, err := w.AdvanceToNext(); ran != 0 || err != nil || since(w) != 25*time.Second {
		t.Fatalf("AdvanceToNext with nothing pending = %d, %v at %v", ran, err, since(w))
	}
}

func TestVirtualEqualDeadlinesRunInTheOrderAdded(t *testing.T) {
	w := newVirtualWheel(t)
	var ran []int
	add := func(delay time.Duration, from, to int) {
		for i := from; i < to; i++ {
			label := i
			if _, err := w.AfterFunc(delay, func() { ran = append(ran, label) }); err != nil {
				t.Fatal(err)
			}
		}
	}
	add(300*time.Second, 0, 40)
	mustAdvance(t, w, 100*time.Second, 0)
	add(200*time.Second, 40, 60)
	mustAdvance(t, w, 200*time.Second, 60)
	for i, label := range ran {
		if label != i {
			t.Fatalf("ran %v, want 0 to 59 in order", ran)
		}
	}
}

func TestVirtualStopAndResetSemantics(t *testing.T) {
	w := newVirtualWheel(t)
	runs := map[string]int{}
	count := func(name string) func() { return func() { runs[name]++ } }
	stopped, _ := w.AfterFunc(time.Minute, count("stopped"))
	fired, _ := w.AfterFunc(time.Minute, count("fired"))
	periodic, _ := w.EveryFixedDelay(time.Minute, count("periodic"))
	pushed, _ := w.AfterFunc(time.Minute, count("pushed"))
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop of a pending timer: true once")
	}
	if !pushed.Reset(5 * time.Minute) {
		t.Fatal("Reset of a pending timer")
	}
	mustAdvance(t, w, 3*time.Minute, 4) // fired, and periodic three times
	if fired.Stop() || !periodic.Stop() {
		t.Fatal("Stop after the run: false for a one-shot, true for a periodic timer")
	}
	mustAdvance(t, w, 3*time.Minute, 1) // pushed, at 5 min
	want := map[string]int{"fired": 1, "periodic": 3, "pushed": 1}
	if !reflect.DeepEqual(runs, want) {
		t.Fatalf("runs %v, want %v", runs, want)
	}
}

func TestVirtualAdvanceOnlyOnAVirtualWheelAndNotFromItsCallbacks(t *testing.T) {
	real := newWheel(t, Config{MaxWorkers: 1})
	if _, err := real.Advance(time.Second); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Advance on the real clock: %v", err)
	}
	w := newVirtualWheel(t)
	var inside error
	_, _ = w.AfterFunc(time.Second, func() { _, inside = w.Advance(time.Second) })
	mustAdvance(t, w, time.Second, 1)
	if !errors.Is(inside, ErrBusy) || since(w) != time.Second {
		t.Fatalf("Advance from a callback: %v, clock at %v", inside, since(w))
	}
}

func TestVirtualCloseFromACallbackStopsTheAdvance(t *testing.T) {
	w := newVirtualWheel(t)
	runs := 0
	_, _ = w.Every(time.Second, func() {
		runs++
		if runs == 3 {
			_ = w.Close()
		}
	})
	if ran, err := w.Advance(time.Minute); ran != 3 || err != nil {
		t.Fatalf("Advance = %d, %v; want 3, nil", ran, err)
	}
	if _, err := w.Advance(time.Minute); !errors.Is(err, ErrClosed) {
		t.Fatalf("Advance after Close: %v", err)
	}
}

// Timers already due when added (a zero or negative delay: Go's "now") start in the order
// they were added, on a virtual wheel and on a wheel of one worker (held busy while they
// queue), like the runtime's timers of equal deadlines. The wheel of one worker sets
// SlowCallback, so that its funcs run on the library's worker (the direct path): on the
// real clock without it, deliverers run batches side by side and a func that blocks holds
// up only its own batch (README, "How callbacks run").
func TestTimersAlreadyDueRunInTheOrderAdded(t *testing.T) {
	for _, kind := range []string{"virtual", "one worker"} {
		t.Run(kind, func(t *testing.T) {
			cfg := Config{VirtualStart: start}
			if kind == "one worker" {
				cfg = Config{MinWorkers: 1, MaxWorkers: 1, SlowCallback: time.Hour}
			}
			w := newWheel(t, cfg)
			gate := make(chan struct{})
			if kind == "one worker" {
				mustAfterFunc(t, w, 0, func() { <-gate })
			}
			ran := make(chan int, 16)
			delays := []time.Duration{0, -50 * time.Millisecond, 0, -time.Hour, -1, 0, 0, 0}
			want := make([]int, len(delays))
			for i, d := range delays {
				i := i
				mustAfterFunc(t, w, d, func() { ran <- i })
				want[i] = i
			}
			close(gate)
			if kind == "virtual" {
				mustAdvance(t, w, 0, len(delays))
			}
			got := make([]int, len(delays))
			for i := range got {
				got[i] = receive(t, ran, "a due timer's run")
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("ran in order %v; want %v", got, want)
			}
		})
	}
}
