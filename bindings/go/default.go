package timerwheel

import (
	"sync"
	"time"
)

var shared struct {
	once sync.Once
	w    *Wheel
}

// Default returns the process-wide shared wheel (the C library's tw_default: default
// Config, started on first use). Its Close does nothing. The package-level functions use it.
func Default() *Wheel {
	shared.once.Do(func() {
		w := wrapWheel(cDefault(), true)
		w.shared = true
		if w.c == nil {
			w.err = ErrInternal
			w.gate.close()
		}
		shared.w = w
	})
	return shared.w
}

// AfterFunc calls f after d on the shared wheel; see Wheel.AfterFunc.
func AfterFunc(d time.Duration, f func()) (*Timer, error) {
	return Default().AfterFunc(d, f)
}

// Every calls f every period on the shared wheel; see Wheel.Every.
func Every(period time.Duration, f func()) (*Timer, error) {
	return Default().Every(period, f)
}

// EveryFixedDelay calls f every period after the previous call returned, on the shared
// wheel; see Wheel.EveryFixedDelay.
func EveryFixedDelay(period time.Duration, f func()) (*Timer, error) {
	return Default().EveryFixedDelay(period, f)
}

// Version returns the version of the C library linked in.
func Version() string {
	return cVersion()
}
