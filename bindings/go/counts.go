package timerwheel

import "sync/atomic"

// unstarted counts the one-shots that Stop or Reset reached after the library had started
// their C callback, and so counted them as fired, but before their func started (the
// callback waits for the Timer's lock in expire), or, for a NewTimer, before its value was
// received (chan.go). The Go view, where a timer is active
// until its func starts, counts such a timer as stopped, or as one timer moved.
//
// It counts the runs that the library started and begin skipped (run.go): the library
// counts them as fired, the Go view as a periodic run that never started, or as a one-shot
// that Close discarded.
//
// It also counts the panics of delivered fires (deliver.go), whose funcs run outside the
// library's callbacks, where the library cannot count them.
type unstarted struct {
	stopped atomic.Uint64 // fired for the library; cancelled in the Go view
	moved   atomic.Uint64 // fired and added anew for the library; one timer in the Go view
	skipped atomic.Uint64 // periodic runs fired for the library; never started in the Go view
	// one-shots fired for the library; discarded by Close in the Go view
	discarded atomic.Uint64
	panics    atomic.Uint64 // panics of delivered fires
}

// adjust turns the library's counters into the Go view.
func (u *unstarted) adjust(s Stats) Stats {
	stopped, moved, discarded := u.stopped.Load(), u.moved.Load(), u.discarded.Load()
	s.Added -= moved
	s.Fired -= stopped + moved + discarded + u.skipped.Load()
	s.FiredOneShot -= stopped + moved + discarded
	s.Cancelled += stopped
	s.Discarded += discarded
	s.CallbackPanics += u.panics.Load()
	return s
}
