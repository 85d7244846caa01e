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
	if t := timers.fired(h); t != nil {
		fire(t, h)
	}
}

// fire runs t's func for the firing C timer of handle h, unless that C timer no longer
// stands for t (see begin).
func fire(t *Timer, h uintptr) {
	arm, ok := t.begin(h)
	if !ok {
		return
	}
	defer t.end(h)
	t.run(arm)
}

// run calls the timer's func (or sends on its channel, for the C timer numbered arm),
// recovering and counting a panic so that the wheel goes on.
func (t *Timer) run(arm uint32) {
	t.w.callbackStarted()
	defer t.w.callbackEnded()
	if t.C != nil {
		t.x.ch.send(arm)
		return
	}
	defer func() {
		if v := recover(); v != nil {
			t.w.panicked(v)
		}
	}()
	t.f()
}
