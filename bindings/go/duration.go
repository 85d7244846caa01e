package timerwheel

import "time"

// ceilDiv divides d by unit, rounding up; zero or negative d gives 0.
func ceilDiv(d, unit time.Duration) uint64 {
	if d <= 0 {
		return 0
	}
	q := uint64(d / unit)
	if d%unit != 0 {
		q++
	}
	return q
}

// nanos converts a duration to the C API's nanoseconds; zero or negative means 0.
func nanos(d time.Duration) uint64 {
	return ceilDiv(d, time.Nanosecond)
}

// millis converts a delay to the C API's milliseconds, rounding up so that a timer never
// fires early; zero or negative means as soon as possible.
func millis(d time.Duration) uint64 {
	return ceilDiv(d, time.Millisecond)
}
