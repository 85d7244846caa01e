package timerwheel

import (
	"testing"
	"time"
)

// patience bounds every wait of the tests: generous, since the machines are shared.
const patience = 10 * time.Second

// newWheel starts a wheel that the test closes when it ends.
func newWheel(t *testing.T, cfg Config) *Wheel {
	t.Helper()
	w, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

// eventually fails the test unless cond becomes true within patience.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not true after %v: %s", patience, what)
		}
		time.Sleep(time.Millisecond)
	}
}

// receive waits for a value on ch, failing the test after patience.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(patience):
		t.Fatalf("timed out after %v waiting for %s", patience, what)
		panic("unreachable")
	}
}

// mustAfterFunc adds a one-shot timer or fails the test.
func mustAfterFunc(t *testing.T, w *Wheel, d time.Duration, f func()) *Timer {
	t.Helper()
	tm, err := w.AfterFunc(d, f)
	if err != nil {
		t.Fatalf("AfterFunc(%v): %v", d, err)
	}
	return tm
}

// checkInvariant asserts the counters' balance at a quiet moment.
func checkInvariant(t *testing.T, s Stats) {
	t.Helper()
	if s.Added != s.FiredOneShot+s.Cancelled+s.Pending+s.Discarded {
		t.Fatalf("Added %d != FiredOneShot %d + Cancelled %d + Pending %d + Discarded %d",
			s.Added, s.FiredOneShot, s.Cancelled, s.Pending, s.Discarded)
	}
}

// liveEntries is the number of w's live registry entries once the deletes that its Stops
// queued (stops.go) are made.
func liveEntries(w *Wheel) int {
	if w.gate.enter() {
		w.flushStops()
		w.gate.exit()
	}
	return timers.countWheel(w)
}
