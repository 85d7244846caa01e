package timerwheel

import "sync/atomic"

// goCounts are what the Go side knows that the library's counters do not: events of C
// timers that the library counts one way and the Go view another.
type goCounts struct {
	panics  atomic.Uint64 // callbacks that panicked (recovered here, unseen by the library)
	rearmed atomic.Uint64 // C timers armed again by expire: the same Timer, moved later
	stopped atomic.Uint64 // one-shots stopped while their C timer fired: cancelled, not fired
	dropped atomic.Uint64 // one-shots that could not be armed again at Close: discarded
}

// adjust turns the library's counters into the Go view.
func (c *goCounts) adjust(s Stats) Stats {
	rearmed, stopped, dropped := c.rearmed.Load(), c.stopped.Load(), c.dropped.Load()
	s.Added -= rearmed
	s.Fired -= rearmed + stopped + dropped
	s.FiredOneShot -= rearmed + stopped + dropped
	s.Cancelled += stopped
	s.Discarded += dropped
	s.CallbackPanics += c.panics.Load()
	return s
}
