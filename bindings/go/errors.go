package timerwheel

// #include "timerwheel.h"
import "C"

import (
	"errors"
	"fmt"
)

// The errors of the package. Every status of the C library maps to one of them, and errors
// returned by the package match them with errors.Is. Their texts are the library's
// (tw_status_str).
var (
	// ErrInvalid reports a bad argument: a nil func, a non-positive period, or a Config
	// out of range (the error New returns then names the field and its range).
	ErrInvalid = statusError(C.TW_ERR_INVALID)
	// ErrNotFound reports a timer that is not pending.
	ErrNotFound = statusError(C.TW_ERR_NOT_FOUND)
	// ErrFull reports that the wheel holds Config.MaxTimers pending timers already.
	ErrFull = statusError(C.TW_ERR_FULL)
	// ErrClosed reports a call on a wheel that is closed or closing.
	ErrClosed = statusError(C.TW_ERR_SHUTDOWN)
	// ErrBusy reports a call that cannot be made from inside one of the wheel's callbacks.
	ErrBusy = statusError(C.TW_ERR_BUSY)
	// ErrInternal reports a failure inside the library; the wheel may be unusable.
	ErrInternal = statusError(C.TW_ERR_INTERNAL)
	// ErrForked reports a wheel created before the process was forked (the C library's
	// TW_ERR_FORKED). A Go program forks only to exec, so it never sees it in practice.
	ErrForked = statusError(C.TW_ERR_FORKED)
	// ErrGroupClosed reports an add to a Group that was stopped.
	ErrGroupClosed = statusError(C.TW_ERR_GROUP_CLOSED)
	// ErrExists reports an AddDurable of a (Key, Name) that has a timer, without Replace.
	ErrExists = statusError(C.TW_ERR_EXISTS)
	// ErrNoHandler reports a durable timer whose name has no handler (HandleDurable).
	ErrNoHandler = statusError(C.TW_ERR_NO_HANDLER)
	// ErrStore reports that the durable store refused or failed; the error is a
	// *StoreError with the store's message.
	ErrStore = statusError(C.TW_ERR_STORE)
	// ErrUnreachable reports that PostgreSQL did not answer a Fleet: Join could not
	// connect, a change was kept in the node's buffer (written when it answers), or Flush
	// left changes there.
	ErrUnreachable = statusError(C.TW_ERR_UNREACHABLE)
	// ErrFenced reports a Fleet.Ack of a token whose shard moved past its epoch: refused,
	// and delivered again by the shard's new owner.
	ErrFenced = statusError(C.TW_ERR_FENCED)
)

// statusError is the package's error of a tw_status: the library's text of it.
func statusError(status C.tw_status) error {
	return errors.New("timerwheel: " + cStatusText(status))
}

// errTooSmall is the status of a buffer too small for what the library writes into it;
// MetricsText grows its buffer on it, so no caller of the package sees it.
var errTooSmall = statusError(C.TW_ERR_TOO_SMALL)

// errNilFunc is returned for a nil callback.
var errNilFunc = fmt.Errorf("nil func: %w", ErrInvalid)

// errNonPositivePeriod is returned by Every for a period of zero or less.
var errNonPositivePeriod = fmt.Errorf("non-positive period: %w", ErrInvalid)

// statusErrors maps tw_status codes to errors.
var statusErrors = [...]error{
	C.TW_OK:               nil,
	C.TW_ERR_INVALID:      ErrInvalid,
	C.TW_ERR_NOT_FOUND:    ErrNotFound,
	C.TW_ERR_FULL:         ErrFull,
	C.TW_ERR_SHUTDOWN:     ErrClosed,
	C.TW_ERR_BUSY:         ErrBusy,
	C.TW_ERR_INTERNAL:     ErrInternal,
	C.TW_ERR_FORKED:       ErrForked,
	C.TW_ERR_TOO_SMALL:    errTooSmall,
	C.TW_ERR_GROUP_CLOSED: ErrGroupClosed,
	C.TW_ERR_EXISTS:       ErrExists,
	C.TW_ERR_NO_HANDLER:   ErrNoHandler,
	C.TW_ERR_STORE:        ErrStore,
	C.TW_ERR_UNREACHABLE:  ErrUnreachable,
	C.TW_ERR_FENCED:       ErrFenced,
}

// errFromCode returns the error of a tw_status code; unknown codes wrap ErrInternal.
func errFromCode(code int) error {
	if code >= 0 && code < len(statusErrors) {
		return statusErrors[code]
	}
	return fmt.Errorf("status %d: %w", code, ErrInternal)
}

// errZeroValue is returned by the methods of a zero Group or Ticker, made by no Wheel.
var errZeroValue = fmt.Errorf("a zero value, made by no Wheel: %w", ErrInvalid)
