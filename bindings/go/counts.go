package timerwheel

import "sync/atomic"

// unstarted turns the library's counters into the Go view, where a timer is active until
// its func starts. It counts the one-shots that Stop or Reset reached after the library had
// started their C callback, and so counted them as fired, but before their func started
// (the callback waits for the Timer's lock in begin), or, for a NewTimer, before its value
// was received (chan.go): stopped, or one timer moved. It counts the one-shots whose func
// begin skipped as the wheel was closing (run.go): discarded. It counts the Resets that
// deleted a C timer and added one anew (a periodic timer, a NewTimer): one timer moved.
//
// Fired is not the library's: the Go view counts the periodic runs whose func began, not
// those the library started (a run that reaches the Timer after a Stop or Close is
// skipped), so that it stays exact across Close, whose last snapshot of the library's
// counters may miss a run or count one that never begins.
//
// It also counts the panics of delivered fires (deliver.go), whose funcs run outside the
// library's callbacks, where the library cannot count them.
type unstarted struct {
	stopped   atomic.Uint64 // fired for the library; cancelled in the Go view
	moved     atomic.Uint64 // fired and added anew for the library; one timer in the Go view
	discarded atomic.Uint64 // fired for the library; discarded by Close in the Go view
	rearmed   atomic.Uint64 // cancelled and added anew for the library; one timer moved
	// periodicRuns counts the periodic runs whose func began.
	periodicRuns atomic.Uint64
	panics       atomic.Uint64 // panics of delivered fires
}

// adjust turns the library's counters into the Go view.
func (u *unstarted) adjust(s Stats) Stats {
	stopped, moved, discarded := u.stopped.Load(), u.moved.Load(), u.discarded.Load()
	rearmed := u.rearmed.Load()
	s.Added -= moved + rearmed
	s.FiredOneShot -= stopped + moved + discarded
	s.Fired = s.FiredOneShot + u.periodicRuns.Load()
	s.Cancelled += stopped
	s.Cancelled -= rearmed
	s.Discarded += discarded
	s.CallbackPanics += u.panics.Load()
	return s
}
