package timerwheel

import (
	"context"
	"fmt"
	"time"
)

// errNilContext is returned for a nil context.
var errNilContext = fmt.Errorf("nil context: %w", ErrInvalid)

// AfterFuncContext is AfterFunc tied to ctx: once ctx is done, the timer is stopped, as
// if by Stop, so f does not start after that (a call already started goes on). When ctx
// is already done, no timer is made and the error is context.Cause(ctx); Reset of the
// timer once ctx is done returns false and arms nothing.
//
// No goroutine waits for ctx: the timer registers with context.AfterFunc, which for the
// standard library's contexts only adds an entry to ctx, removed when the timer fires or
// is stopped, and starts a goroutine only when ctx is done, to stop the timer. (A context
// type of another package, without an AfterFunc method of its own, costs a goroutine per
// timer while it waits, as context.AfterFunc says.)
func (w *Wheel) AfterFuncContext(ctx context.Context, d time.Duration, f func()) (*Timer, error) {
	return w.startContext(ctx, 0, fixedRate, f, func(t *Timer) error { return t.arm(d) })
}

// EveryContext is Every tied to ctx: once ctx is done, the calls stop, as if by Stop. As
// AfterFuncContext, it makes no timer when ctx is already done.
func (w *Wheel) EveryContext(ctx context.Context, period time.Duration, f func()) (*Timer, error) {
	if period <= 0 {
		return nil, errNonPositivePeriod
	}
	return w.startContext(ctx, period, fixedRate, f, func(t *Timer) error { return t.arm(period) })
}

// AfterFuncContext calls f after d on the shared wheel unless ctx is done first; see
// Wheel.AfterFuncContext.
func AfterFuncContext(ctx context.Context, d time.Duration, f func()) (*Timer, error) {
	return Default().AfterFuncContext(ctx, d, f)
}

// startContext creates a timer tied to ctx and arms it with arm.
func (w *Wheel) startContext(ctx context.Context, period time.Duration, mode periodMode,
	f func(), arm func(t *Timer) error) (*Timer, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	return w.startWith(period, mode, f, func(t *Timer) error {
		t.x = &extras{ctx: ctx}
		return arm(t)
	})
}

// context is the context t is tied to; nil when none. The caller holds t.mu.
func (t *Timer) context() context.Context {
	if t.x == nil {
		return nil
	}
	return t.x.ctx
}

// watchContext has t stopped when its context is done, while t has a C timer. The caller
// holds t.mu.
func (t *Timer) watchContext() {
	if ctx := t.context(); ctx != nil && t.x.ctxStop == nil {
		t.x.ctxStop = context.AfterFunc(ctx, func() { t.Stop() })
	}
}

// unwatchContext ends the watch of t's context, once t has no C timer: it fired or was
// stopped. The caller holds t.mu.
func (t *Timer) unwatchContext() {
	if t.x != nil && t.x.ctxStop != nil {
		t.x.ctxStop()
		t.x.ctxStop = nil
	}
}
