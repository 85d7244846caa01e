package timerwheel

import (
	"fmt"
	"time"
)

// Missed says what a timer made by EveryFrom does with the points of its schedule that
// passed before it was made (while the process was down).
type Missed int

const (
	// MissedRunOnce calls f once at once for all of them, then at the next point.
	MissedRunOnce Missed = iota
	// MissedSkip calls f first at the next point.
	MissedSkip
)

// errPeriodNotMillis is returned by EveryFrom for a period with a fraction of a millisecond.
var errPeriodNotMillis = fmt.Errorf("period not a whole number of milliseconds: %w", ErrInvalid)

// EveryFrom calls f at a fixed rate on the schedule first, first + period, first + 2 period,
// ... anchored at first on the wheel's clock (Now): a timer exported before a restart
// (Export) made again on its schedule, with first its Due. When first is ahead, the first
// call is at first. When it has passed, missed says what becomes of the points that
// passed; a point due right now is called now either way. From its first call on, the
// timer is one of Every: the wall clock is read once, here. first rounds up to the
// millisecond; the period must be a whole number of milliseconds (ErrInvalid otherwise),
// so the schedule stays exact. Stop ends the calls.
func (w *Wheel) EveryFrom(first time.Time, period time.Duration, f func(), missed Missed) (*Timer, error) {
	if period <= 0 {
		return nil, errNonPositivePeriod
	}
	if period%time.Millisecond != 0 {
		return nil, errPeriodNotMillis
	}
	return w.startWith(period, fixedRate, f, func(t *Timer) error {
		return t.armWith(func(h uintptr) (uint64, error) {
			return cAddEveryFrom(w.c, first, period, missed, h)
		})
	})
}

// Pending is one pending timer of an Export.
type Pending struct {
	// Timer is the timer (its Stop and Reset act on it, in this wheel).
	Timer *Timer
	// Due is its next call on the wheel's clock (Now), to the millisecond, rounded down; it
	// lies before the export for a timer that is due and waits for a worker.
	Due time.Time
	// Period is the time between its calls; 0 for a one-shot (AfterFunc).
	Period time.Duration
	// FixedDelay is true for a timer made by EveryFixedDelay.
	FixedDelay bool
	// Func is the func it calls; nil for a timer of NewTimer or NewTicker, which sends on
	// its channel instead.
	Func func()
}

// Export returns the pending timers of the wheel as of one instant, in deadline order, and
// the number of periodic timers left out because their func was running at that instant;
// each is pending again when its func returns, so export again while the count is not 0.
// The wheel's adds, stops and new calls wait while the library copies the timers out; a
// timer added or stopped concurrently is wholly before or after the export. A one-shot
// whose func has started is not pending. The application stores what it needs (the
// session a Func stands for, Due, Period) and after a restart makes the timers again:
// EveryFrom(Due, Period, ...) for fixed-rate ones, AfterFunc(Due.Sub(w.Now()), ...) for
// one-shots. ErrClosed after Close.
func (w *Wheel) Export() ([]Pending, int, error) {
	if !w.gate.enter() {
		return nil, 0, w.err
	}
	defer w.gate.exit()
	w.flushStops() // a stopped timer's C timer is not pending
	exported, running, err := cExport(w.c)
	if err != nil {
		return nil, 0, err
	}
	handles := make([]uintptr, len(exported))
	for i, e := range exported {
		handles[i] = e.handle
	}
	pending := make([]Pending, 0, len(exported))
	for i, t := range timers.lookup(handles) {
		if t == nil {
			continue // stopped since the export, or a one-shot that has started since
		}
		e := exported[i]
		pending = append(pending, Pending{Timer: t, Due: e.due, Period: e.period,
			FixedDelay: e.fixedDelay, Func: t.f})
	}
	return pending, running, nil
}
