package timerwheel

import (
	"errors"
	"fmt"
)

// The errors of the package. Every status of the C library maps to one of them, and errors
// returned by the package match them with errors.Is.
var (
	// ErrInvalid reports a bad argument: a nil func, a non-positive period, or a Config
	// out of range (Tick below 100µs or above 1s, MinWorkers above MaxWorkers, MaxWorkers
	// above 1024).
	ErrInvalid = errors.New("timerwheel: invalid argument")
	// ErrNotFound reports a timer that is not pending.
	ErrNotFound = errors.New("timerwheel: timer not found")
	// ErrFull reports that the wheel holds Config.MaxTimers pending timers already.
	ErrFull = errors.New("timerwheel: too many timers")
	// ErrClosed reports a call on a wheel that is closed or closing.
	ErrClosed = errors.New("timerwheel: wheel closed")
	// ErrBusy reports a call that cannot be made from inside one of the wheel's callbacks.
	ErrBusy = errors.New("timerwheel: busy")
	// ErrInternal reports a failure inside the library; the wheel may be unusable.
	ErrInternal = errors.New("timerwheel: internal error")
	// ErrForked reports a wheel created before the process was forked (the C library's
	// TW_ERR_FORKED). A Go program forks only to exec, so it never sees it in practice.
	ErrForked = errors.New("timerwheel: wheel was created before fork()")
)

// errNilFunc is returned for a nil callback.
var errNilFunc = fmt.Errorf("nil func: %w", ErrInvalid)

// errNonPositivePeriod is returned by Every for a period of zero or less.
var errNonPositivePeriod = fmt.Errorf("non-positive period: %w", ErrInvalid)

// statusErrors maps tw_status codes (their values are fixed by the C ABI) to errors.
var statusErrors = [...]error{
	0: nil,
	1: ErrInvalid,
	2: ErrNotFound,
	3: ErrFull,
	4: ErrClosed,
	5: ErrBusy,
	6: ErrInternal,
	7: ErrForked,
}

// errFromCode returns the error of a tw_status code; unknown codes wrap ErrInternal.
func errFromCode(code int) error {
	if code >= 0 && code < len(statusErrors) {
		return statusErrors[code]
	}
	return fmt.Errorf("status %d: %w", code, ErrInternal)
}
