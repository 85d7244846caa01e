package timerwheel

import (
	"sync"
	"time"
)

// Group is a set of timers stopped together, such as the timers of one session
// (docs/contract.md, "Timer groups"). Its AfterFunc and Every make timers as the Wheel's
// do; Stop stops every timer of the group at once, in time proportional to their number,
// and the group takes no timer after it (ErrGroupClosed). A timer of a group is an
// ordinary Timer: its own Stop and Reset work as usual (a Reset after the group was
// stopped fails, and the timer stays stopped). Its methods are safe for concurrent use,
// also from inside the group's own funcs.
//
// Locks: a group's mu is taken before the mu of any of its timers, never after.
type Group struct {
	w  *Wheel
	id uint64 // the C group

	mu      sync.Mutex // guards the fields below
	stopped bool
	timers  map[*Timer]struct{}
	prune   int // the size of timers at which stopped and fired timers are dropped from it
}

// Group makes a new group of timers on the wheel.
func (w *Wheel) Group() (*Group, error) {
	if !w.gate.enter() {
		return nil, w.err
	}
	defer w.gate.exit()
	id, err := cGroupCreate(w.c)
	if err != nil {
		return nil, err
	}
	return &Group{w: w, id: id, timers: map[*Timer]struct{}{}, prune: 64}, nil
}

// AfterFunc is Wheel.AfterFunc, for a timer of the group.
func (g *Group) AfterFunc(d time.Duration, f func()) (*Timer, error) {
	return g.start(d, 0, fixedRate, f)
}

// Every is Wheel.Every, for a timer of the group, with its period rounded up to the
// millisecond.
func (g *Group) Every(period time.Duration, f func()) (*Timer, error) {
	if period <= 0 {
		return nil, errNonPositivePeriod
	}
	return g.start(period, period, fixedRate, f)
}

func (g *Group) start(delay, period time.Duration, mode periodMode, f func()) (*Timer, error) {
	if g.w == nil {
		return nil, errZeroValue
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return nil, ErrGroupClosed
	}
	g.pruneEnded()
	return g.w.startWith(period, mode, f, func(t *Timer) error {
		t.group = g
		return t.arm(delay)
	})
}

// cID is the C id of the group, 0 for none.
func (g *Group) cID() uint64 {
	if g == nil {
		return 0
	}
	return g.id
}

// join records a timer that was armed in the C group. The caller holds g.mu.
func (g *Group) join(t *Timer) {
	if g.timers != nil {
		g.timers[t] = struct{}{}
	}
}

// pruneEnded drops the timers that ended from the group's set once they are many, so that
// a long-lived group that keeps adding one-shots stays small (a Reset that arms one of them
// again joins it anew). The caller holds g.mu.
func (g *Group) pruneEnded() {
	if len(g.timers) >= g.prune {
		for other := range g.timers {
			other.mu.Lock()
			ended := other.handle == 0
			other.mu.Unlock()
			if ended {
				delete(g.timers, other)
			}
		}
		g.prune = 2*len(g.timers) + 64
	}
}

// Stop stops every timer of the group, as each timer's Stop would, and closes the group:
// later adds return ErrGroupClosed. It returns true if the group was open. Like
// Timer.Stop, it does not wait for funcs that have started; a periodic timer whose func is
// running (Stop called from it, say) runs no more.
func (g *Group) Stop() bool {
	if g.w == nil {
		return false // a zero Group, made by no Wheel
	}
	g.mu.Lock()
	if g.stopped || !g.w.gate.open() { // Close closed it, with the wheel's other groups
		g.mu.Unlock()
		return false
	}
	g.stopped = true
	// Closed under g.mu: an add or a Reset that arms a C timer in the group comes before
	// (and is in the set taken here) or is refused.
	if g.w.gate.enter() {
		_ = cGroupClose(g.w.c, g.id)
		g.w.gate.exit()
	}
	timers := g.timers
	g.timers = nil
	g.mu.Unlock()
	for t := range timers {
		t.Stop()
	}
	return true
}
