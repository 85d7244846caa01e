package timerwheel

import "slices"

// The runs of a Timer's func: which are under way, so that StopWait can wait for them and
// can tell when it is called from one of them.

// begin decides, when the C timer of handle h fires, whether t's func runs now (not for a
// one-shot stopped or armed anew meanwhile), and records the run. It returns the number of
// the C timer that fired (see Timer.arms); 0 for a periodic C timer that no longer stands
// for t (stopped, or replaced by a Reset after a Stop), whose run goes ahead.
func (t *Timer) begin(h uintptr) (arm uint64, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if h == t.handle {
		arm = t.arms
	}
	if t.period == 0 {
		if h != t.handle {
			return 0, false
		}
		t.handle = 0
		t.unwatchContext()
	}
	t.runs = append(t.runs, h)
	if t.ch != nil {
		t.ch.inflight.Add(1)
	}
	return arm, true
}

// end records that the run of handle h has returned, waking StopWait after the last one.
func (t *Timer) end(h uintptr) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if i := slices.Index(t.runs, h); i >= 0 {
		last := len(t.runs) - 1
		t.runs[i] = t.runs[last]
		t.runs = t.runs[:last]
	}
	if len(t.runs) == 0 && t.idle != nil {
		close(t.idle)
		t.idle = nil
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
// thread it runs on is inside the C callback of one of t's runs.
func (t *Timer) inOwnFunc() bool {
	h := cCurrentHandle()
	if h == 0 {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Contains(t.runs, h)
}

// waitIdle returns once no run of t's func is under way.
func (t *Timer) waitIdle() {
	t.mu.Lock()
	if len(t.runs) == 0 {
		t.mu.Unlock()
		return
	}
	if t.idle == nil {
		t.idle = make(chan struct{})
	}
	idle := t.idle
	t.mu.Unlock()
	<-idle
}
