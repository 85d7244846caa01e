package timerwheel

import (
	"runtime"
	"testing"
	"time"
)

// A wheel dropped without Close whose timers were all stopped has no timer pending, so the
// collector closes it (Wheel's doc): the stopped timers' registry entries and queued
// deletes must not keep it reachable.
func TestAWheelDroppedWithItsTimersStoppedIsClosedByTheCollector(t *testing.T) {
	for _, c := range []struct {
		name string
		stop func(w *Wheel) error
	}{
		{"AfterFunc", func(w *Wheel) error { return stopNew(w.AfterFunc(time.Hour, func() {})) }},
		{"Every", func(w *Wheel) error { return stopNew(w.Every(time.Hour, func() {})) }},
		{"NewTimer", func(w *Wheel) error { return stopNew(w.NewTimer(time.Hour)) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			settleGarbage()
			before := openWheels.Load()
			for i := 0; i < 5; i++ {
				w, err := New(Config{})
				if err != nil {
					t.Fatal(err)
				}
				if err := c.stop(w); err != nil {
					t.Fatal(err)
				}
			}
			deadline := time.Now().Add(patience)
			for openWheels.Load() > before {
				if time.Now().After(deadline) {
					t.Fatalf("%d of 5 dropped wheels still open after %v", openWheels.Load()-before, patience)
				}
				runtime.GC()
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// stopNew stops a timer just made, or returns the error of its making.
func stopNew(t *Timer, err error) error {
	if err == nil && !t.Stop() {
		panic("a timer due in an hour was not stopped")
	}
	return err
}

// settleGarbage lets earlier tests' dropped wheels be collected first, so that they do
// not count as this test's.
func settleGarbage() {
	for i := 0; i < 5; i++ {
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
	}
}
