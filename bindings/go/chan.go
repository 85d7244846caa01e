package timerwheel

import (
	"sync"
	"sync/atomic"
	"time"
)

// Channel timers and tickers in the shape of time.NewTimer and time.NewTicker, with the
// semantics of Go 1.23 and later whatever the Go version that builds them (the module
// requires Go 1.21): once Stop or Reset has returned, no value from before it is received
// from C. The channel has a buffer of one value, and Stop and Reset empty it; unlike Go
// 1.23's, whose len and cap read 0, len(C) and cap(C) show that buffer. The value is the
// time the send was made, like time.Timer's. A send never blocks a worker thread: a
// ticker's value that finds the buffer full is dropped, as time.Ticker drops ticks for a
// slow receiver.

// channel is what stands behind the C of a Timer made by NewTimer or of a Ticker.
type channel struct {
	c chan time.Time
	// inflight counts the runs that began (Timer.begin) and have not decided whether to
	// send yet: a Stop or Reset then prevents a send, which counts as stopping the timer.
	inflight atomic.Int64

	mu sync.Mutex // guards from, orders every send against Stop and Reset
	// from is the number of the first C timer whose values may still be sent (Timer.arms):
	// the values of those before it are stale.
	from uint32
}

// stale reports whether a value of C timer number arm comes from before a Stop or Reset
// (arm before from, in wrapping arithmetic). The caller holds ch.mu.
func (ch *channel) stale(arm uint32) bool {
	return int32(arm-ch.from) < 0
}

func newChannel() *channel {
	return &channel{c: make(chan time.Time, 1), from: 1}
}

// send delivers the time now for the run of C timer number arm, unless a Stop or Reset
// came after that timer was armed, or the buffer is full.
func (ch *channel) send(arm uint32) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.inflight.Add(-1)
	if ch.stale(arm) {
		return
	}
	select {
	case ch.c <- time.Now():
	default:
	}
}

// cut makes every value of t's C timers so far stale and empties the buffer. It reports
// whether a value was prevented: one in the buffer, or a send under way. The caller holds
// ch.mu.
func (ch *channel) cut(t *Timer) bool {
	t.mu.Lock()
	ch.from = t.arms + 1
	t.mu.Unlock()
	prevented := ch.inflight.Load() > 0
	select {
	case <-ch.c:
		return true
	default:
		return prevented
	}
}

// stop is Stop of a channel timer: true if no value of it had been received yet.
func (ch *channel) stop(t *Timer) bool {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.stopLocked(t)
}

// stopLocked is stop; the caller holds ch.mu.
func (ch *channel) stopLocked(t *Timer) bool {
	stopped := t.stopFunc()
	if !ch.cut(t) {
		return stopped
	}
	if !stopped {
		t.tookBack(false)
	}
	return true
}

// reset is Reset of a channel timer: the timer is stopped and armed anew, so that no
// value of its earlier settings can follow; true if no value of it had been received yet.
func (ch *channel) reset(t *Timer, d time.Duration) bool {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	stopped := t.stopFunc()
	prevented := ch.cut(t)
	arms := t.armCount()
	t.resetFunc(d) // re-arms the stopped timer
	armed := t.armCount() != arms
	switch {
	case stopped && armed:
		t.w.unstarted.rearmed.Add(1)
	case prevented && !stopped:
		t.tookBack(armed)
	}
	return stopped || prevented
}

// tookBack counts in the Go view (counts.go) a one-shot whose value Stop or Reset took
// back (from the buffer, or a send under way) after its C timer fired: the library counted
// a fire, and the call returned true. It counts as stopped, or, when Reset armed it anew,
// as one timer moved.
func (t *Timer) tookBack(rearmed bool) {
	switch {
	case t.period != 0:
	case rearmed:
		t.w.unstarted.moved.Add(1)
	default:
		t.w.unstarted.stopped.Add(1)
	}
}

// armCount is t.arms, read under t.mu.
func (t *Timer) armCount() uint32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.arms
}

// NewTimer makes a timer that sends the current time on its channel C once, after d, like
// time.NewTimer. It follows Go 1.23's time.Timer: Stop and Reset return true when the
// value had not been received yet, and no receive after they return gets a value from
// before. Stop does not close C. Until it fires or is stopped, the timer is kept by the
// wheel (unlike Go 1.23's, which the garbage collector takes once unreferenced): Stop a
// timer no longer wanted. Reset re-arms it (a delete and an add in the library).
func (w *Wheel) NewTimer(d time.Duration) (*Timer, error) {
	ch := newChannel()
	t := &Timer{C: ch.c, w: w, x: &extras{ch: ch}}
	t.mu.Lock()
	err := t.arm(d)
	t.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return t, nil
}

// Ticker sends the time on its channel C every period, like time.Ticker, with Go 1.23's
// semantics (see NewTimer): once Stop or Reset has returned, no tick from before is
// received. Ticks keep a fixed rate, as Every's calls do; a tick that finds the previous
// one still unreceived is dropped.
type Ticker struct {
	// C delivers the ticks.
	C <-chan time.Time
	t *Timer
}

// NewTicker makes a Ticker whose first tick comes one period from now. A period of zero
// or less gives ErrInvalid (time.NewTicker panics). Stop it when done: the wheel keeps it
// until then.
func (w *Wheel) NewTicker(period time.Duration) (*Ticker, error) {
	if period <= 0 {
		return nil, errNonPositivePeriod
	}
	ch := newChannel()
	t := &Timer{C: ch.c, w: w, x: &extras{ch: ch}, period: period, mode: fixedRate}
	t.mu.Lock()
	err := t.arm(period)
	t.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &Ticker{C: ch.c, t: t}, nil
}

// Stop ends the ticks; no tick from before is received after it returns. It does not
// close C.
func (tk *Ticker) Stop() {
	if tk.t == nil {
		return // a zero Ticker, as time.Ticker's Stop
	}
	tk.t.Stop()
}

// Reset stops the ticker and starts it again with a new period, the next tick one period
// from now, like time.Ticker's Reset. ErrInvalid for a period of zero or less (the ticker
// is unchanged then), ErrClosed on a closed wheel (the ticker stays stopped).
func (tk *Ticker) Reset(period time.Duration) error {
	if tk.t == nil {
		return errZeroValue
	}
	if period <= 0 {
		return errNonPositivePeriod
	}
	t, ch := tk.t, tk.t.x.ch
	ch.mu.Lock()
	defer ch.mu.Unlock()
	stopped := t.stopFunc()
	ch.cut(t)
	t.mu.Lock()
	defer t.mu.Unlock()
	err := t.armWith(func(h uintptr) (uint64, error) {
		return cAdd(t.w.c, 0, period, period, fixedRate, h, false)
	})
	if stopped && err == nil {
		t.w.unstarted.rearmed.Add(1) // one ticker, moved
	}
	return err
}

// NewTimer makes a channel timer on the shared wheel; see Wheel.NewTimer.
func NewTimer(d time.Duration) (*Timer, error) {
	return Default().NewTimer(d)
}

// NewTicker makes a Ticker on the shared wheel; see Wheel.NewTicker.
func NewTicker(period time.Duration) (*Ticker, error) {
	return Default().NewTicker(period)
}
