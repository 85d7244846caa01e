package timerwheel

import (
	"sync/atomic"
	"time"
)

// gate lets calls into a C wheel run at the same time as each other but never at the same
// time as its destruction: tw_destroy frees the wheel, so it must wait until no other call
// is inside it, and none may start afterwards.
type gate struct {
	n atomic.Int64 // calls inside, plus closedBit once closed
}

const closedBit = int64(1) << 62

// enter admits a call; false once the gate is closed. Every true enter needs an exit.
func (g *gate) enter() bool {
	if g.n.Add(1) >= closedBit {
		g.n.Add(-1)
		return false
	}
	return true
}

// exit ends a call admitted by enter.
func (g *gate) exit() {
	g.n.Add(-1)
}

// close refuses every later call and waits until the calls inside have left. It reports
// whether this was the call that closed the gate.
func (g *gate) close() bool {
	return g.closeAllowing(0)
}

// closeAllowing is close, waiting only until at most `inside` calls are left inside: an
// Advance whose callback is closing the wheel stays inside until that callback returns.
func (g *gate) closeAllowing(inside int64) bool {
	for {
		n := g.n.Load()
		if n >= closedBit {
			return false
		}
		if g.n.CompareAndSwap(n, n|closedBit) {
			break
		}
	}
	// Calls into the wheel return quickly (none of them waits for a callback), so a short
	// sleep between looks is enough.
	for g.n.Load() > closedBit+inside {
		time.Sleep(20 * time.Microsecond)
	}
	return true
}

// open reports whether the gate still admits calls.
func (g *gate) open() bool {
	return g.n.Load() < closedBit
}
