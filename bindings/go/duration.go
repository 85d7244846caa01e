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

// ceilUnixMilli is t in milliseconds since the Unix epoch, rounded up so that a schedule
// anchored at t never runs early.
func ceilUnixMilli(t time.Time) int64 {
	ms := t.UnixMilli() // rounded down, also before 1970
	if time.UnixMilli(ms).Before(t) {
		ms++
	}
	return ms
}
