package timerwheel

import "time"

// Advance moves a virtual clock (Config.VirtualStart) forward by d, rounded up to the
// millisecond, and runs every callback that falls due on the way on the calling goroutine,
// in deadline order, with the clock standing at each one's deadline: periodic runs, and
// timers that callbacks add or reset, run in the same call when they fall due by its end.
// It returns how many ran. ErrInvalid on the real clock, ErrBusy from one of the wheel's
// callbacks (or while one runs), ErrClosed after Close. One Advance runs at a time.
func (w *Wheel) Advance(d time.Duration) (int, error) {
	return w.advance(func(c cWheel) (int, error) { return cAdvance(c, d) })
}

// AdvanceToNext moves a virtual clock to the next deadline and runs what is due there, as
// Advance does; with no timer pending it returns 0 and the clock stays.
func (w *Wheel) AdvanceToNext() (int, error) {
	return w.advance(cAdvanceToNext)
}

// Now is the wheel's clock, to the millisecond: a virtual clock's time, or the system
// clock's. After Close it returns the zero Time.
func (w *Wheel) Now() time.Time {
	if !w.gate.enter() {
		return time.Time{}
	}
	defer w.gate.exit()
	return time.UnixMilli(cNowMs(w.c))
}

func (w *Wheel) advance(step func(cWheel) (int, error)) (int, error) {
	if !w.virtual {
		return 0, ErrInvalid
	}
	if w.inCallback.Load() > 0 {
		return 0, ErrBusy // one of this wheel's callbacks: only an Advance runs them
	}
	w.advanceMu.Lock()
	defer w.advanceMu.Unlock()
	if !w.gate.enter() {
		return 0, w.err
	}
	defer w.gate.exit()
	return step(w.c)
}
