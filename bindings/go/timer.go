package timerwheel

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Timer is a pending call of a func, made by AfterFunc, Every or EveryFixedDelay, or a
// pending send on its channel C, made by NewTimer. Its methods are safe for concurrent
// use, also from inside its own func.
type Timer struct {
	// C delivers the time of each expiry of a timer made by NewTimer; nil otherwise, as
	// for time.AfterFunc's timers.
	C <-chan time.Time

	w      *Wheel
	f      func()
	period time.Duration // 0 for a one-shot timer
	mode   periodMode
	// arms is how many C timers have stood for t (the number of the current one); guarded
	// by mu, beside mode to keep a Timer in 88 bytes.
	arms  uint32
	group *Group // the group its C timers join, nil for none

	mu      sync.Mutex // guards the fields below
	id      uint64     // the C timer that stands for t now
	handle  uintptr    // its registry handle; 0 once t has fired or been stopped
	running uintptr    // the handle of a run of the func under way (run.go); 0 when none
	// x holds what only some timers need: made with the timer for a channel or context
	// timer, when first needed otherwise (guarded by mu then).
	x *extras
}

// extras is the part of a Timer that most timers do without.
type extras struct {
	ch  *channel        // the channel behind C; nil for a func timer (set once)
	ctx context.Context // stops the timer when done; nil when none (set once)

	// Guarded by the Timer's mu.
	ctxStop func() bool   // unregisters the context.AfterFunc that stops t; nil when none
	runs    []uintptr     // the handles of more runs under way, beside Timer.running
	idle    chan struct{} // closed when the last run under way returns; made by StopWait
}

// extras returns t.x, made if need be. The caller holds t.mu.
func (t *Timer) extras() *extras {
	if t.x == nil {
		t.x = &extras{}
	}
	return t.x
}

// Stop prevents the timer from firing (again). It returns true if the call stopped the
// timer, false if the timer had already fired (its func has started) or been stopped, as
// time.Timer's Stop does. Stop does not wait for a call of the func that has started
// (StopWait does); called from a periodic timer's own func, it returns true and no further
// call starts. Once it has returned true, no run begins: a periodic run that the library
// had started, but which had not begun here, is skipped (one that had begun may still be
// entering the func; StopWait waits for it). For a timer made by NewTimer, Stop follows
// Go 1.23's time.Timer: see NewTimer.
func (t *Timer) Stop() bool {
	if t.C != nil {
		return t.x.ch.stop(t)
	}
	return t.stopFunc()
}

// stopFunc is Stop of the C timer that stands for t.
func (t *Timer) stopFunc() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.w
	if t.handle == 0 || !w.gate.enter() {
		return false
	}
	defer w.gate.exit()
	if t.deferrable() {
		// Stopped here: a fire of this handle finds it gone (begin); the C timer is deleted
		// with others (stops.go).
		w.deferStop(t.id, t.handle)
		t.handle = 0
		t.unwatchContext()
		return true
	}
	return t.deleted(cDelete(w.c, t.id))
}

// deleted applies err, what deleting t's live C timer returned, to t: whether that
// stopped t. The caller holds t.mu and is inside the wheel's gate.
func (t *Timer) deleted(err error) bool {
	switch {
	case err == nil:
		timers.release(t.handle) // inside the gate: Close then never counts t as live
	case t.startedInC(err):
		t.w.unstarted.stopped.Add(1) // expire finds the handle gone and does not run the func
	default:
		return false
	}
	t.handle = 0
	t.unwatchContext()
	return true
}

// Reset changes the timer to fire after duration d, like time.Timer's Reset for a timer
// made by time.AfterFunc: it returns true if the timer had been active and is now moved,
// and false if it had fired or been stopped, in which case its func is scheduled to run
// again after d. For a periodic timer, Reset moves the next call (also one that was due
// and whose func had not started); the period stays. On a closed wheel, or once the
// context of AfterFuncContext is done, Reset does nothing and returns false. For a timer
// made by NewTimer, Reset follows Go 1.23's time.Timer: see NewTimer.
func (t *Timer) Reset(d time.Duration) bool {
	if t.w == nil {
		return false // a zero Timer, made by no Wheel: never active
	}
	if t.C != nil {
		return t.x.ch.reset(t, d)
	}
	return t.resetFunc(d)
}

// resetFunc is Reset of the C timer that stands for t.
func (t *Timer) resetFunc(d time.Duration) bool {
	if t.group != nil {
		t.group.mu.Lock() // before t.mu, as everywhere (see Group)
		defer t.group.mu.Unlock()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if ctx := t.context(); ctx != nil && ctx.Err() != nil {
		return false // done: context.AfterFunc is stopping t, if it was armed
	}
	w := t.w
	if t.handle == 0 {
		_ = t.arm(d) // fails only when the wheel is closed or full: the timer stays stopped
		return false
	}
	if !w.gate.enter() {
		return false
	}
	if t.period != 0 && t.running == 0 {
		defer w.gate.exit()
		return t.rearm(d)
	}
	err := cReset(w.c, t.id, millis(d))
	w.gate.exit()
	if err == nil {
		return true
	}
	// A new C timer takes the place of one whose callback started: expire then finds the
	// handle changed. When none can be added (the wheel is closing or full), the started
	// callback runs the func, and Reset reports that the timer had fired.
	if !t.startedInC(err) || t.arm(d) != nil {
		return false
	}
	w.unstarted.moved.Add(1)
	return true
}

// rearm moves a live periodic timer by deleting its C timer and adding another, rather
// than re-arming it: a run that the library started before, still on its way to begin,
// then finds its handle gone and is skipped, as after Stop, so that Reset moves the run
// that was due too. Only while no run is under way: the library starts no run of the C
// timer before that one returns, and a second C timer could run beside it. It reports
// whether t is armed anew. The caller holds t.mu (and its group's) and is inside the
// wheel's gate.
func (t *Timer) rearm(d time.Duration) bool {
	if !t.deleted(cDelete(t.w.c, t.id)) {
		return false
	}
	if t.arm(d) != nil {
		return false // closing, full or its group stopped: t stays stopped
	}
	t.w.unstarted.rearmed.Add(1)
	return true
}

// startedInC reports whether err, from a call on t's live C timer, means that the library
// has started its callback, for a one-shot whose func has not started yet (the callback
// waits for t.mu in expire).
func (t *Timer) startedInC(err error) bool {
	return t.period == 0 && errors.Is(err, ErrNotFound)
}

// arm adds the C timer that stands for t, first firing after d. The caller holds t.mu,
// and its group's mu if it is in one.
func (t *Timer) arm(d time.Duration) error {
	return t.armWith(func(h uintptr) (uint64, error) {
		id, err := cAdd(t.w.c, t.group.cID(), d, t.period, t.mode, h, t.w.batched)
		if err == nil && t.group != nil {
			t.group.join(t)
		}
		return id, err
	})
}

// armWith adds the C timer that stands for t with add, which gets its registry handle.
// The caller holds t.mu.
func (t *Timer) armWith(add func(handle uintptr) (uint64, error)) error {
	w := t.w
	if ctx := t.context(); ctx != nil && ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if !w.gate.enter() {
		return w.err
	}
	defer w.gate.exit()
	h := timers.add(t)
	id, err := add(h)
	if errors.Is(err, ErrFull) && w.batched {
		// Stopped timers whose delete is still queued (stops.go) hold places: free them.
		w.flushStops()
		id, err = add(h)
	}
	if err != nil {
		timers.release(h)
		return err
	}
	t.id, t.handle = id, h
	t.arms++
	t.watchContext()
	return nil
}
