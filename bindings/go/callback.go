package timerwheel

// #include <stdint.h>
import "C"

// timers is the registry of every live timer of the process.
var timers registry

// twgoFire is the C callback of every Go timer, called on a worker thread of the wheel (or
// its tick thread when it has no workers). It runs the timer's func and returns when the
// func has; the library starts no other run of the same timer meanwhile.
//
//export twgoFire
func twgoFire(handle C.uintptr_t) {
	h := uintptr(handle)
	t := timers.fired(h)
	if t == nil || (t.period == 0 && !t.expire(h)) {
		return
	}
	t.run()
}

// run calls the timer's func, recovering and counting a panic so that the wheel goes on.
func (t *Timer) run() {
	if t.w.virtual {
		t.w.inCallback.Add(1)
		defer t.w.inCallback.Add(-1)
	}
	defer func() {
		if v := recover(); v != nil {
			t.w.panicked(v)
		}
	}()
	t.f()
}
