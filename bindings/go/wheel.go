package timerwheel

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Wheel is a timer wheel with its own tick thread and worker threads. All its methods are
// safe for concurrent use, from any goroutine and from inside its callbacks.
//
// A Wheel runs until Close; pending timers keep it reachable, as the runtime's timers keep
// time.AfterFunc funcs. A Wheel that becomes unreachable without Close (so with no timer
// pending) is closed by the garbage collector. Most programs need only the shared wheel of
// the package-level functions: every Wheel costs a thread of its own.
type Wheel struct {
	c      cWheel
	shared bool  // the process-wide wheel: Close does nothing
	err    error // what calls return once the gate is closed
	gate   gate
	// unstarted corrects the library's counters for the Go view of Stop and Reset.
	unstarted unstarted
	// onPanic is called with the value of each recovered callback panic.
	onPanic func(v any)
	// durable holds the handlers of HandleDurable.
	durable durableHandlers

	// virtual: on a virtual clock, whose callbacks run inside Advance. advanceMu lets one
	// Advance run at a time; inCallback counts its callbacks running (0 or 1).
	virtual    bool
	advanceMu  sync.Mutex
	inCallback atomic.Int64

	// batched: its one-shot fires are delivered in batches (deliver.go); runs counts their
	// funcs that are running or about to.
	batched bool
	runs    sync.WaitGroup
	// stops holds the C timers of Stops not deleted yet (stops.go); batched wheels only.
	stops stopQueue

	// final holds the library's counters once the wheel is closed (set by Close), which
	// Stats returns in the Go view (unstarted).
	final atomic.Pointer[Stats]
}

// wrapWheel is the Wheel of the C wheel c, its one-shot fires delivered in batches when
// batched.
func wrapWheel(c cWheel, batched bool) *Wheel {
	w := &Wheel{c: c, err: ErrClosed, batched: batched}
	if batched {
		startDelivery()
	}
	return w
}

// New starts a wheel. The zero Config means every default.
func New(cfg Config) (*Wheel, error) {
	ccfg, err := cfg.toC()
	defer freeC(ccfg)
	if err != nil {
		return nil, err
	}
	c, err := cCreate(ccfg)
	if err != nil {
		return nil, err
	}
	openWheels.Add(1)
	virtual := !cfg.VirtualStart.IsZero()
	w := wrapWheel(c, !virtual && cfg.SlowCallback == 0)
	w.onPanic, w.virtual = cfg.OnPanic, virtual
	runtime.SetFinalizer(w, (*Wheel).Close)
	return w, nil
}

// openWheels counts the wheels made by New and not yet destroyed.
var openWheels atomic.Int64

// AfterFunc waits for the duration to elapse and then calls f on one of the wheel's worker
// threads, like time.AfterFunc. A duration of zero or less fires as soon as possible; a
// fraction of a millisecond rounds up, so f never runs early. The Timer can cancel the call
// with its Stop method.
func (w *Wheel) AfterFunc(d time.Duration, f func()) (*Timer, error) {
	return w.start(d, 0, fixedRate, f)
}

// Every calls f every period, the first time one period from now, at a fixed rate: the
// runs keep the schedule period, 2 period, ..., exact to the nanosecond (the period need
// not be a multiple of the tick). A call that returns after the next point is followed at
// once by that call; points that passed entirely meanwhile (a slow call, a stalled
// process) are coalesced into it. Runs of f never overlap. Stop ends the calls.
func (w *Wheel) Every(period time.Duration, f func()) (*Timer, error) {
	return w.every(period, fixedRate, f)
}

// EveryFixedDelay calls f every period, the first time one period from now, each later
// time one period after the previous call returned. Stop ends the calls.
func (w *Wheel) EveryFixedDelay(period time.Duration, f func()) (*Timer, error) {
	return w.every(period, fixedDelay, f)
}

func (w *Wheel) every(period time.Duration, mode periodMode, f func()) (*Timer, error) {
	if period <= 0 {
		return nil, errNonPositivePeriod
	}
	return w.start(period, period, mode, f)
}

// start creates and arms a timer; period 0 makes it a one-shot.
func (w *Wheel) start(delay, period time.Duration, mode periodMode, f func()) (*Timer, error) {
	return w.startWith(period, mode, f, func(t *Timer) error { return t.arm(delay) })
}

// startWith creates a timer and arms it with arm.
func (w *Wheel) startWith(period time.Duration, mode periodMode, f func(),
	arm func(t *Timer) error) (*Timer, error) {
	if f == nil {
		return nil, errNilFunc
	}
	t := &Timer{w: w, f: f, period: period, mode: mode}
	t.mu.Lock() // t's C timer may fire before arm returns
	err := arm(t)
	t.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return t, nil
}

// Stats returns a snapshot of the wheel's counters. After Close it returns the final
// counters, with the timers that were pending counted as discarded.
func (w *Wheel) Stats() Stats {
	if w.gate.enter() {
		w.flushStops()
		s, err := cStats(w.c)
		w.gate.exit()
		if err == nil {
			return w.unstarted.adjust(s)
		}
	}
	if final := w.final.Load(); final != nil {
		return w.unstarted.adjust(*final) // funcs may still be skipped (run.go)
	}
	return Stats{}
}

// StatsRecent returns the counters of the last window (from a second to a minute; a
// window out of that range is taken as its nearest end): the events (adds, runs, stops,
// panics, slow callbacks, workers spawned and retired) and the lateness of the callbacks
// started since the newest earlier call at least window ago, give or take half a second
// (since the start when the wheel is younger; Span says how long), the gauges (Pending,
// Workers, QueueDepth) as now. The view is kept by these calls alone, at no cost to the
// timers: called every second, a window of a second spans a second, one of a minute a
// minute. After Close it is the zero Stats. It counts as the library does: a Stop that
// wins against an expiry already under way counts there as a run (Stats gives the Go
// view; so does this, apart from that race).
func (w *Wheel) StatsRecent(window time.Duration) Stats {
	if !w.gate.enter() {
		return Stats{}
	}
	defer w.gate.exit()
	w.flushStops()
	s, err := cStatsRecent(w.c, window)
	if err != nil {
		return Stats{}
	}
	return s
}

// MetricsText returns the wheel's metrics in Prometheus's text format (version 0.0.4), as
// the C library's tw_metrics_text writes them for every interface: counters named
// timerwheel_*_total, gauges, and the histogram timerwheel_lateness_seconds. The package
// github.com/timerwheel/timerwheel/bindings/go/prom serves them as a prometheus.Collector.
// ErrClosed after Close.
func (w *Wheel) MetricsText() (string, error) {
	if !w.gate.enter() {
		return "", ErrClosed
	}
	defer w.gate.exit()
	w.flushStops()
	return cMetricsText(w.c)
}

// Close shuts the wheel down: it waits for the callbacks that are running, discards the
// pending timers without running them, and stops the wheel's threads. Calls after Close
// return ErrClosed (Stop, Reset, StopWait and Group.Stop return false). Close returns
// nil, every time; later calls return at once. Called from one of the wheel's own
// callbacks, it cannot wait for that callback: the wheel is then shut down as soon as the
// callback returns. Once Close has returned, no func of the wheel starts: a fire whose
// func had not started (one of the same batch as the func that called Close, say) is
// discarded. Close does nothing on the shared wheel of the package-level functions.
func (w *Wheel) Close() error {
	// From a callback of an Advance (or while one runs), the Advance stays inside the
	// library until the callback returns: the library's destroy waits for it there.
	if w.shared || !w.gate.closeAllowing(w.inCallback.Load()) {
		return nil
	}
	w.flushStops()         // the gate is closed: no Stop queues a delete after this
	last, _ := cStats(w.c) // the last snapshot: the wheel is freed below
	w.final.Store(&last)
	if errors.Is(cDestroy(w.c), ErrBusy) {
		// Inside one of our own callbacks, where tw_destroy would wait for itself: the
		// wheel stops without waiting, and the library frees it when the callback returns.
		_ = cDestroyNowait(w.c)
		w.awaitTaken() // its queued fires are not discarded below: the library ran them
	} else {
		w.releaseDurable() // after the nowait path a handler may still run: kept
		w.awaitDelivered() // the nowait path waits for no func, these included
	}
	final := closedStats(last, timers.releaseWheel(w))
	w.final.Store(&final)
	openWheels.Add(-1)
	runtime.SetFinalizer(w, nil)
	return nil
}

// closedStats derives the final counters of a wheel from its last snapshot, taken once
// the gate was closed, and the number of timers its destruction discarded. The timers
// that were pending then and not discarded are one-shots that fired meanwhile, as no Stop
// or add reached the wheel (the Go view counts those whose funcs begin skipped as
// discarded).
func closedStats(s Stats, discarded int) Stats {
	d := uint64(discarded)
	if s.Pending > d {
		s.FiredOneShot += s.Pending - d // Fired is the Go view's own count (counts.go)
	}
	s.Discarded += d
	s.Pending, s.QueueDepth, s.Workers = 0, 0, 0
	return s
}

// callbackStarted and callbackEnded bracket each run of a func or durable handler: on a
// virtual clock it runs inside Advance, which must then neither wait for it (Close) nor
// run again (Advance).
func (w *Wheel) callbackStarted() {
	if w.virtual {
		w.inCallback.Add(1)
	}
}

func (w *Wheel) callbackEnded() {
	if w.virtual {
		w.inCallback.Add(-1)
	}
}

// panicked has the library count a recovered callback panic (in callback_panics, at once)
// and then hands it to Config.OnPanic. A panic in OnPanic itself is dropped:
// no panic may unwind into the C library.
func (w *Wheel) panicked(v any) {
	if cRecordCallbackFailure() != nil { // a delivered fire, outside the library's callbacks
		w.unstarted.panics.Add(1)
	}
	if w.onPanic != nil {
		defer func() { _ = recover() }()
		w.onPanic(v)
	}
}
