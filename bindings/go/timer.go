package timerwheel

import (
	"sync"
	"time"
)

// Timer is a pending call of a func, made by AfterFunc, Every or EveryFixedDelay. Its
// methods are safe for concurrent use, also from inside its own func.
type Timer struct {
	w        *Wheel
	f        func()
	periodMs uint64 // 0 for a one-shot timer
	mode     periodMode

	mu     sync.Mutex // guards the C timer the Timer stands for now: its id and handle
	id     uint64
	handle uintptr
}

// Stop prevents the timer from firing (again). It returns true if the call stopped the
// timer, false if the timer had already fired (a one-shot timer whose func has started) or
// been stopped, as time.Timer's Stop does. Stop does not wait for a call of the func that
// has started; called from a periodic timer's own func, it returns true and no further
// call starts.
func (t *Timer) Stop() bool {
	t.mu.Lock()
	stopped := t.stopLocked()
	t.mu.Unlock()
	return stopped
}

func (t *Timer) stopLocked() bool {
	w := t.w
	if !w.gate.enter() {
		return false
	}
	err := cDelete(w.c, t.id)
	w.gate.exit()
	if err != nil {
		return false
	}
	timers.release(t.handle)
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
	w := t.w
	if !w.gate.enter() {
		return false
	}
	err := cReset(w.c, t.id, millis(d))
	w.gate.exit()
	if err == nil {
		return true
	}
	// The timer had fired (a one-shot) or been stopped: its C timer has ended.
	_ = t.arm(d) // fails only when the wheel is closing or full: the timer stays stopped
	return false
}

// arm adds the C timer that stands for t, first firing after d. The caller holds t.mu
// (or t is not yet shared).
func (t *Timer) arm(d time.Duration) error {
	w := t.w
	if !w.gate.enter() {
		return w.err
	}
	defer w.gate.exit()
	h := timers.add(t)
	id, err := cAdd(w.c, millis(d), t.periodMs, t.mode, h)
	if err != nil {
		timers.release(h)
		return err
	}
	t.id, t.handle = id, h
	return nil
}
