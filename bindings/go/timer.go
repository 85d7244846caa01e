package timerwheel

import (
	"errors"
	"math"
	"sync"
	"time"
)

// Timer is a pending call of a func, made by AfterFunc, Every or EveryFixedDelay. Its
// methods are safe for concurrent use, also from inside its own func.
type Timer struct {
	w      *Wheel
	f      func()
	period time.Duration // 0 for a one-shot timer
	mode   periodMode

	mu     sync.Mutex // guards the fields below
	id     uint64     // the C timer that stands for t now
	handle uintptr    // its registry handle; 0 once t has fired or been stopped
	// A one-shot timer is due at due; its C timer fires at armed or later. Reset to a time
	// after armed only moves due, without a call into C: when the C timer fires before
	// due, it is armed again for the rest of the time (see expire). Idle timeouts that are
	// pushed back again and again so cost one C timer per expiry, not one per push.
	// A C timer that was added rather than reset has due 0 (due when it fires) and armed
	// unknown (math.MaxInt64), which spares the clock read (slow on some machines) in
	// AfterFunc: its first Reset moves it in C and learns armed.
	due, armed int64 // monotonic ns, as now returns
}

// Stop prevents the timer from firing (again). It returns true if the call stopped the
// timer, false if the timer had already fired (its func has started) or been stopped, as
// time.Timer's Stop does. Stop does not wait for a call of the func that has started;
// called from a periodic timer's own func, it returns true and no further call starts.
func (t *Timer) Stop() bool {
	t.mu.Lock()
	stopped := t.stopLocked()
	t.mu.Unlock()
	return stopped
}

func (t *Timer) stopLocked() bool {
	w := t.w
	if t.handle == 0 || !w.gate.enter() {
		return false
	}
	err := cDelete(w.c, t.id)
	switch {
	case err == nil:
		timers.release(t.handle) // inside the gate: Close then never counts t as live
	case t.period == 0 && errors.Is(err, ErrNotFound):
		// A one-shot whose C timer is firing, its func not yet started: expire finds the
		// handle gone and does not start it.
		w.counts.stopped.Add(1)
	default:
		w.gate.exit()
		return false
	}
	w.gate.exit()
	t.handle = 0
	return true
}

// Reset changes the timer to fire after duration d, like time.Timer's Reset for a timer
// made by time.AfterFunc: it returns true if the timer had been active and is now moved,
// and false if it had fired or been stopped, in which case its func is scheduled to run
// again after d. For a periodic timer, Reset moves the next call; the period stays. On a
// closed wheel Reset does nothing and returns false.
func (t *Timer) Reset(d time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.w.gate.open() {
		return false
	}
	if t.handle == 0 {
		_ = t.arm(d) // fails only when the wheel is closing or full: the timer stays stopped
		return false
	}
	if due, _ := deadlines(now(), d); t.period == 0 && due >= t.armed {
		t.due = due
		return true
	}
	t.move(d)
	return true
}

// ResetThroughC is Reset with one tw_reset per call (a fired or stopped timer is added
// anew), measured against Reset by cmd/bench.
func (t *Timer) ResetThroughC(d time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.handle == 0 {
		_ = t.arm(d)
		return false
	}
	w := t.w
	if !w.gate.enter() {
		return false
	}
	err := cReset(w.c, t.id, millis(d))
	w.gate.exit()
	return err == nil
}

// move re-arms t's live C timer d from now.
func (t *Timer) move(d time.Duration) {
	w := t.w
	if !w.gate.enter() {
		return
	}
	start := now()
	err := cReset(w.c, t.id, millis(d))
	w.gate.exit()
	if err != nil {
		// Only a one-shot whose C timer is firing gets here: expire weighs the new due.
		t.due, _ = deadlines(start, d)
		return
	}
	t.due, t.armed = deadlines(start, d)
}

// arm adds the C timer that stands for t, first firing after d. The caller holds t.mu.
func (t *Timer) arm(d time.Duration) error {
	w := t.w
	if !w.gate.enter() {
		return w.err
	}
	h := timers.add(t)
	id, err := cAdd(w.c, d, t.period, t.mode, h)
	if err != nil {
		timers.release(h)
		w.gate.exit()
		return err
	}
	w.gate.exit()
	t.id, t.handle = id, h
	t.due, t.armed = 0, math.MaxInt64
	return nil
}

// expire decides, when the C timer of handle h of a one-shot timer fires, whether the func
// runs now: not if the timer was stopped or armed anew meanwhile, and not if Reset moved
// it later, in which case its C timer is armed again for the rest of the time.
func (t *Timer) expire(h uintptr) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.handle != h {
		return false
	}
	if rest := t.due - now(); rest > 0 {
		t.handle = 0
		if t.arm(time.Duration(rest)) == nil {
			t.w.counts.rearmed.Add(1)
		} else {
			t.w.counts.dropped.Add(1) // the wheel is closing
		}
		return false
	}
	t.handle = 0
	return true
}

// epoch is the origin of now.
var epoch = time.Now()

// now reads the monotonic clock, in ns since epoch.
func now() int64 {
	return int64(time.Since(epoch))
}

// deadlines returns, for a C timer added at start to fire after d, when the func is due
// and the earliest the C timer fires (d rounded up to the millisecond), saturating.
func deadlines(start int64, d time.Duration) (due, armed int64) {
	if d < 0 {
		d = 0
	}
	ms := millis(d)
	if ms > uint64(math.MaxInt64-start)/uint64(time.Millisecond) {
		return math.MaxInt64, math.MaxInt64
	}
	return start + int64(d), start + int64(ms)*int64(time.Millisecond)
}
