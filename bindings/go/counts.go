package timerwheel

import "sync/atomic"

// unstarted counts the one-shots that Stop or Reset reached after the library had started
// their C callback, and so counted them as fired, but before their func started (the
// callback waits for the Timer's lock in expire). The Go view, where a timer is active
// until its func starts, counts such a timer as stopped, or as one timer moved.
//
// It counts the periodic runs that the library started and begin skipped, as they reached
// the Timer after a Stop: the library counts them as fired, the Go view as never started.
//
// It also counts the panics of delivered fires (deliver.go), whose funcs run outside the
// library's callbacks, where the library cannot count them.
type unstarted struct {
	stopped atomic.Uint64 // fired for the library; cancelled in the Go view
	moved   atomic.Uint64 // fired and added anew for the library; one timer in the Go view
	skipped atomic.Uint64 // periodic runs fired for the library; never started in the Go view
	panics  atomic.Uint64 // panics of delivered fires
}

// adjust turns the library's counters into the Go view.
func (u *unstarted) adjust(s Stats) Stats {
	stopped, moved := u.stopped.Load(), u.moved.Load()
	s.Added -= moved
	s.Fired -= stopped + moved + u.skipped.Load()
	s.FiredOneShot -= stopped + moved
	s.Cancelled += stopped
	s.CallbackPanics += u.panics.Load()
	return s
}
