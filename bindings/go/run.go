package timerwheel

import "slices"

// The runs of a Timer's func: which are under way, so that StopWait can wait for them and
// can tell when it is called from one of them. Mostly one at a time (Timer.running); a
// one-shot reset while its func runs can have two.

// begin decides, when the C timer of handle h fires, whether t's func runs now, and records
// the run. It does not for a C timer that no longer stands for t: a one-shot stopped or
// armed anew meanwhile, or a periodic timer stopped (perhaps then armed anew by Reset)
// after the library started this run but before its callback got here. Once Stop has
// returned, no run starts, and StopWait, which finds no run under way, need not wait for
// one on its way. Nor does it once the wheel is closing: no func starts after Close, also
// one that the library had handed out (the rest of a delivered batch, say). It returns the
// number of the C timer that fired (see Timer.arms).
func (t *Timer) begin(h uintptr) (arm uint32, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for t.period != 0 && h == t.handle && t.running != 0 {
		// The library never overlaps runs of one C timer: this one was armed by a Reset
		// after a Stop, while a run of the C timer before was under way. Runs of a
		// periodic timer never overlap: it waits for that one (end).
		t.awaitIdleLocked()
	}
	if h != t.handle || !t.w.gate.open() {
		t.skip(h)
		return 0, false
	}
	if t.period == 0 {
		t.handle = 0
		t.unwatchContext()
	} else {
		t.w.unstarted.periodicRuns.Add(1)
	}
	if t.running == 0 {
		t.running = h
	} else {
		x := t.extras()
		x.runs = append(x.runs, h)
	}
	if t.C != nil {
		t.x.ch.inflight.Add(1)
	}
	return t.arms, true
}

// skip counts a run of handle h that begin does not start: a one-shot that the wheel's
// Close stopped is discarded (one that Stop or Reset stopped was counted there; a periodic
// run counts only when it begins). The caller holds t.mu.
func (t *Timer) skip(h uintptr) {
	if t.period == 0 && h == t.handle {
		t.handle = 0
		t.unwatchContext()
		t.w.unstarted.discarded.Add(1)
	}
}

// end records that the run of handle h has returned, waking StopWait after the last one.
func (t *Timer) end(h uintptr) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.x == nil {
		t.running = 0
		return
	}
	x := t.x
	if t.running == h {
		t.running = 0
		if n := len(x.runs); n > 0 {
			t.running, x.runs = x.runs[n-1], x.runs[:n-1]
		}
	} else if i := slices.Index(x.runs, h); i >= 0 {
		x.runs = slices.Delete(x.runs, i, i+1)
	}
	if t.running == 0 && x.idle != nil {
		close(x.idle)
		x.idle = nil
	}
}

// StopWait stops the timer as Stop does, then waits until no call of its func is running
// (one that started before, on another thread), as the C library's tw_delete_sync does:
// when it returns, the func is not running and, unless Reset or a concurrent call starts
// the timer again, will not run. It returns what Stop returned.
//
// Called from the timer's own func, where it would wait for itself, it returns false and
// ErrBusy at once and changes nothing (Stop is the call to make there). Called from
// another timer's func, it blocks that worker thread while it waits.
func (t *Timer) StopWait() (bool, error) {
	if t.inOwnFunc() {
		return false, ErrBusy
	}
	stopped := t.Stop()
	t.waitIdle()
	return stopped, nil
}

// inOwnFunc reports whether the calling goroutine is running a func of t: the library
// thread it runs on is inside the C callback of one of t's runs, or it is the deliverer
// running one of them.
func (t *Timer) inOwnFunc() bool {
	h := cCurrentHandle()
	if h == 0 {
		h = deliveredHandle()
	}
	if h == 0 {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.running == h || (t.x != nil && slices.Contains(t.x.runs, h))
}

// waitIdle returns once no run of t's func is under way.
func (t *Timer) waitIdle() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.running != 0 {
		t.awaitIdleLocked()
	}
}

// awaitIdleLocked lets go of t.mu until the runs under way have returned (end), then takes
// it again. The caller holds t.mu, with a run under way.
func (t *Timer) awaitIdleLocked() {
	x := t.extras()
	if x.idle == nil {
		x.idle = make(chan struct{})
	}
	idle := x.idle
	t.mu.Unlock()
	<-idle
	t.mu.Lock()
}
