// Package workload runs the benchmark workloads of docs/benchmarks.md (W1, W2, W3) against
// timerwheel and against the standard library's timers, through one interface, so that
// both are measured by the same code in the same process.
package workload

import (
	"time"

	timerwheel "github.com/timerwheel/timerwheel/bindings/go"
)

// Timer is what both implementations' timers can do.
type Timer interface {
	Stop() bool
	Reset(d time.Duration) bool
}

// Impl is a timer implementation under measurement.
type Impl struct {
	Name     string
	Baseline bool
	// AfterFunc calls f after d, like time.AfterFunc.
	AfterFunc func(d time.Duration, f func()) Timer
	// Close releases what the implementation holds (its wheel).
	Close func()
}

// Std is the baseline: the Go runtime's timers.
func Std() Impl {
	return Impl{
		Name:      "go-time",
		Baseline:  true,
		AfterFunc: func(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) },
		Close:     func() {},
	}
}

// Wheel is timerwheel with a wheel of its own, at the default 1 ms tick.
func Wheel() Impl {
	w, err := timerwheel.New(timerwheel.Config{})
	if err != nil {
		panic(err)
	}
	return Impl{
		Name: "timerwheel-go",
		AfterFunc: func(d time.Duration, f func()) Timer {
			t, err := w.AfterFunc(d, f)
			if err != nil {
				panic(err)
			}
			return t
		},
		Close: func() { _ = w.Close() },
	}
}

// Both returns the baseline and timerwheel, in the order they are run.
func Both() []func() Impl {
	return []func() Impl{Std, Wheel}
}

// ImplNames names the implementations of Both, in the same order.
var ImplNames = []string{"go-time", "timerwheel-go"}

// NewImpl starts the implementation of that name; false if there is none.
func NewImpl(name string) (Impl, bool) {
	for i, n := range ImplNames {
		if n == name {
			return Both()[i](), true
		}
	}
	return Impl{}, false
}

// Stopwatch is paused around the set-up of a workload so that a testing.B measures only
// the timed phases; *testing.B is one.
type Stopwatch interface {
	StartTimer()
	StopTimer()
}

// NoStopwatch is the Stopwatch of a run outside testing.B.
type NoStopwatch struct{}

// StartTimer does nothing.
func (NoStopwatch) StartTimer() {}

// StopTimer does nothing.
func (NoStopwatch) StopTimer() {}
