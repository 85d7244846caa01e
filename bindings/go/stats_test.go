package timerwheel

import (
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Stats has the fields of the library's tw_stats but size, in their order, in CamelCase;
// the times, microseconds or milliseconds there, are time.Duration here, without the _us
// or _ms.
func TestStatsHasTheFieldsOfTheLibrary(t *testing.T) {
	library := reflect.TypeOf(statsFromC).In(0).Elem() // C.tw_stats
	var want []string
	for i := 0; i < library.NumField(); i++ {
		if name := library.Field(i).Name; name != "size" {
			want = append(want, camelCase(strings.TrimSuffix(strings.TrimSuffix(name, "_us"), "_ms")))
		}
	}
	var got []string
	for i := 0; i < reflect.TypeOf(Stats{}).NumField(); i++ {
		got = append(got, reflect.TypeOf(Stats{}).Field(i).Name)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Stats fields %v, want those of tw_stats: %v", got, want)
	}
}

// camelCase turns late_p50 into LateP50.
func camelCase(name string) string {
	var b strings.Builder
	for _, part := range strings.Split(name, "_") {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

func TestStatsCountEveryTimer(t *testing.T) {
	w := newWheel(t, Config{})
	var wg sync.WaitGroup
	wg.Add(5)
	for i := 0; i < 5; i++ {
		mustAfterFunc(t, w, time.Millisecond, wg.Done)
	}
	for i := 0; i < 3; i++ {
		mustAfterFunc(t, w, time.Hour, func() {}).Stop()
	}
	for i := 0; i < 2; i++ {
		mustAfterFunc(t, w, time.Hour, func() {})
	}
	wg.Wait()
	eventually(t, "the fired timers to end", func() bool { return w.Stats().Pending == 2 })
	s := w.Stats()
	if s.Added != 10 || s.FiredOneShot != 5 || s.Cancelled != 3 || s.Pending != 2 {
		t.Fatalf("Added %d FiredOneShot %d Cancelled %d Pending %d, want 10 5 3 2",
			s.Added, s.FiredOneShot, s.Cancelled, s.Pending)
	}
	if s.Fired < 5 || s.Workers == 0 || s.WorkersPeak < s.Workers {
		t.Fatalf("Fired %d Workers %d WorkersPeak %d", s.Fired, s.Workers, s.WorkersPeak)
	}
	checkInvariant(t, s)
	w.Close()
	final := w.Stats()
	if final.Discarded != 2 || final.Pending != 0 {
		t.Fatalf("after Close: Discarded %d Pending %d, want 2 and 0", final.Discarded, final.Pending)
	}
	checkInvariant(t, final)
}

func TestPanicIsRecoveredAndCounted(t *testing.T) {
	values := make(chan any, 1)
	w := newWheel(t, Config{OnPanic: func(v any) { values <- v }})
	mustAfterFunc(t, w, 0, func() { panic("boom") })
	if v := receive(t, values, "the recovered panic"); v != "boom" {
		t.Fatalf("OnPanic got %v, want boom", v)
	}
	done := make(chan struct{})
	mustAfterFunc(t, w, time.Millisecond, func() { close(done) })
	receive(t, done, "a timer after the panic")
	// The library counts a failed callback when it returns.
	eventually(t, "the panic counted", func() bool { return w.Stats().CallbackPanics == 1 })
	w.Close()
	if n := w.Stats().CallbackPanics; n != 1 {
		t.Fatalf("CallbackPanics after Close = %d, want 1", n)
	}
}

// OnPanic runs after the panic was counted: Stats inside it already includes it, for a
// handler that reports the count or alerts on it.
func TestOnPanicSeesThePanicCounted(t *testing.T) {
	var wheel atomic.Pointer[Wheel]
	counted := make(chan uint64, 2)
	w := newWheel(t, Config{OnPanic: func(any) { counted <- wheel.Load().Stats().CallbackPanics }})
	wheel.Store(w)
	mustAfterFunc(t, w, 0, func() { panic("first") })
	if n := receive(t, counted, "OnPanic of the first panic"); n != 1 {
		t.Fatalf("CallbackPanics inside OnPanic = %d, want 1", n)
	}
	mustAfterFunc(t, w, 0, func() { panic("second") })
	if n := receive(t, counted, "OnPanic of the second panic"); n != 2 {
		t.Fatalf("CallbackPanics inside OnPanic = %d, want 2", n)
	}
	w.Close()
	if n := w.Stats().CallbackPanics; n != 2 {
		t.Fatalf("CallbackPanics after Close = %d, want 2 (counted once each)", n)
	}
}

func TestPanicInOnPanicIsContained(t *testing.T) {
	w := newWheel(t, Config{OnPanic: func(any) { panic("and again") }})
	mustAfterFunc(t, w, 0, func() { panic("boom") })
	done := make(chan struct{})
	mustAfterFunc(t, w, time.Millisecond, func() { close(done) })
	receive(t, done, "a timer after the double panic")
	eventually(t, "the panic counted", func() bool { return w.Stats().CallbackPanics == 1 })
}

func TestPeriodicTimerGoesOnAfterPanic(t *testing.T) {
	w := newWheel(t, Config{})
	runs := make(chan struct{}, 16)
	tm, err := w.Every(time.Millisecond, func() {
		runs <- struct{}{}
		panic("every run panics")
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		receive(t, runs, "a periodic run")
	}
	tm.Stop()
	eventually(t, "three panics counted", func() bool { return w.Stats().CallbackPanics >= 3 })
}
