package timerwheel

// #include <stdint.h>
// #include "timerwheel.h"
import "C"

import (
	"errors"
	"fmt"
	"runtime/cgo"
	"sync"
	"time"
	"unsafe"
)

// Durability is when a durable change is committed to the store (Config.Durability).
type Durability int

const (
	// DurableAsync: a change returns once queued; commits go in batches (Config.StoreBatch,
	// Config.StoreDelay). The default when Config.StorePath is set.
	DurableAsync Durability = iota + 1
	// DurableSync: a change returns once the batch holding it is committed.
	DurableSync
)

// MissedPoints is what a periodic durable timer does with the points missed while the
// process was down (Config.MissedPoints).
type MissedPoints int

const (
	// MissedEach delivers every missed point, in order, each with its own token (default).
	MissedEach MissedPoints = iota
	// MissedCoalesce delivers one fire for the latest missed point.
	MissedCoalesce
)

// Token names one fire of a durable timer; a fire delivered again has the same token.
// Store it with the fire's effect, then Ack it.
type Token struct {
	Key        uint64
	Name       string    // the handler's name
	Occurrence time.Time // the scheduled deadline of this fire, to the millisecond
	Epoch      uint64    // the incarnation of the timer's schedule: a replaced, re-added or reset timer has a new one
}

// Ack is a durable handler's answer.
type Ack int

const (
	// AckLater: the application calls Wheel.Ack once it has stored the token's effect.
	AckLater Ack = 0
	// AckNow acknowledges the fire at once.
	AckNow Ack = 1
)

// DurableHandler handles the fires of the durable timers of one name, on one of the
// wheel's threads, several at once. payload is the handler's own copy.
type DurableHandler func(token Token, payload []byte) Ack

// DurableTimer is a timer kept in the store: named by (Key, Name), due at First, then
// every Period (zero: once), rounded to the millisecond.
type DurableTimer struct {
	Key     uint64
	Name    string // the name of a registered handler
	Payload []byte
	First   time.Time
	Period  time.Duration
	Replace bool // replace a timer of the same (Key, Name) instead of failing with ErrExists
}

// StoreError is an error of the durable store (wrapping ErrStore): locked by another
// opener, not a store, damaged, a failed commit. Message is the library's.
type StoreError struct {
	Op      string // the method that failed
	Message string
}

func (e *StoreError) Error() string {
	return "timerwheel: " + e.Op + ": " + e.Message
}

// Unwrap makes a StoreError match ErrStore.
func (e *StoreError) Unwrap() error { return ErrStore }

// durableHandlers are the handlers a wheel registered, released when it is destroyed.
type durableHandlers struct {
	mu      sync.Mutex
	handles []cgo.Handle
}

// durableHandler is what a handler's cgo.Handle holds.
type durableHandler struct {
	w *Wheel
	h DurableHandler
}

// HandleDurable registers h for the durable timers named name, before OpenDurable; a name
// at most once (ErrInvalid), ErrBusy after OpenDurable. A panic in h is recovered and
// counted as a callback panic (Config.OnPanic); its fire stays unacknowledged. A wheel
// with handlers stays reachable until Close: close it.
func (w *Wheel) HandleDurable(name string, h DurableHandler) error {
	if h == nil {
		return errNilFunc
	}
	handle := cgo.NewHandle(durableHandler{w, h})
	err := w.durableCall("HandleDurable", func() C.tw_status {
		return cHandlerRegister(w.c, name, uintptr(handle))
	})
	if err != nil {
		handle.Delete()
		return err
	}
	w.durable.mu.Lock()
	w.durable.handles = append(w.durable.handles, handle)
	w.durable.mu.Unlock()
	return nil
}

// OpenDurable opens Config.StorePath: restores every stored timer and delivers every
// unacknowledged fire again. ErrNoHandler names a stored timer's missing handler (the
// store is untouched); a *StoreError says why the store was refused. It can be tried
// again after a failure.
func (w *Wheel) OpenDurable() error {
	return w.durableCall("OpenDurable", func() C.tw_status { return cDurableOpen(w.c) })
}

// AddDurable adds t: ErrExists if (Key, Name) has a timer and t.Replace is false,
// ErrNoHandler for a name without handler. In DurableSync mode it returns once committed.
func (w *Wheel) AddDurable(t DurableTimer) error {
	if t.Period < 0 {
		return errNonPositivePeriod
	}
	return w.durableCall("AddDurable", func() C.tw_status { return cDurableAdd(w.c, t) })
}

// ResetDurable moves the next deadline of the durable timer (key, name) to when;
// ErrNotFound if there is none.
func (w *Wheel) ResetDurable(key uint64, name string, when time.Time) error {
	return w.durableCall("ResetDurable", func() C.tw_status {
		return cDurableReset(w.c, key, name, when)
	})
}

// DeleteDurable removes the durable timer (key, name) and its future fires (its
// unacknowledged fires stay until acknowledged); ErrNotFound if there is none.
func (w *Wheel) DeleteDurable(key uint64, name string) error {
	return w.durableCall("DeleteDurable", func() C.tw_status {
		return cDurableDelete(w.c, key, name)
	})
}

// Ack acknowledges tokens; it returns how many matched an unacknowledged fire (the others,
// acknowledged already or of another epoch, change nothing).
func (w *Wheel) Ack(tokens ...Token) (int, error) {
	var acked int
	err := w.durableCall("Ack", func() (status C.tw_status) {
		acked, status = cDurableAck(w.c, tokens)
		return status
	})
	return acked, err
}

// Flush returns once everything queued is committed, with the durable sequence number.
func (w *Wheel) Flush() (uint64, error) {
	var seq uint64
	err := w.durableCall("Flush", func() (status C.tw_status) {
		seq, status = cDurableFlush(w.c)
		return status
	})
	return seq, err
}

// FlushTo returns once the changes up to the sequence seq are committed, without waiting
// for those queued after it (read LastSeq from DurableStats after your changes), with the
// durable sequence number. A sequence not handed out yet is an error at once.
func (w *Wheel) FlushTo(seq uint64) (uint64, error) {
	var durable uint64
	err := w.durableCall("FlushTo", func() (status C.tw_status) {
		durable, status = cDurableFlushTo(w.c, seq)
		return status
	})
	return durable, err
}

// DurableStats are the counters of a wheel's durable store (tw_durable_stats in C).
type DurableStats struct {
	LastSeq       uint64 // the last sequence number journalled
	DurableSeq    uint64 // the last sequence number committed
	PendingEvents uint64 // journalled, not committed yet: what a crash now would lose
	Commits       uint64 // commits that succeeded
	FailedCommits uint64 // commits that failed (each batch is retried with the next)
	Acks          uint64 // fires acknowledged
	Redelivered   uint64 // fires delivered again after the open
	Timers        uint64 // durable timers now
	UnackedFires  uint64 // fires not acknowledged yet
	LastError     error  // the error of the last durable call that failed (nil if none)
}

// DurableStats returns the counters of the wheel's durable store, once opened.
func (w *Wheel) DurableStats() (DurableStats, error) {
	var stats DurableStats
	err := w.durableCall("DurableStats", func() (status C.tw_status) {
		stats, status = cDurableStats(w.c)
		return status
	})
	return stats, err
}

// durableCall runs call inside the wheel's gate and makes the error of its status, with
// the store's message for ErrStore and ErrNoHandler.
func (w *Wheel) durableCall(op string, call func() C.tw_status) error {
	if !w.gate.enter() {
		return w.err
	}
	defer w.gate.exit()
	err := statusErr(call())
	switch {
	case errors.Is(err, ErrStore):
		return &StoreError{Op: op, Message: cDurableError(w.c)}
	case errors.Is(err, ErrNoHandler):
		if msg := cDurableError(w.c); msg != "" {
			return fmt.Errorf("timerwheel: %s: %s: %w", op, msg, err)
		}
	}
	return err
}

// releaseDurable lets go of the wheel's handlers, once the library can no longer call them.
func (w *Wheel) releaseDurable() {
	w.durable.mu.Lock()
	defer w.durable.mu.Unlock()
	for _, h := range w.durable.handles {
		h.Delete()
	}
	w.durable.handles = nil
}

// twgoDurable is the C handler of every Go durable handler.
//
//export twgoDurable
func twgoDurable(handle C.uintptr_t, key C.uint64_t, name *C.char, occurrence C.int64_t,
	epoch C.uint64_t, payload unsafe.Pointer, n C.size_t) (ack C.int32_t) {
	d := cgo.Handle(handle).Value().(durableHandler)
	token := Token{Key: uint64(key), Name: C.GoString(name),
		Occurrence: time.UnixMilli(int64(occurrence)), Epoch: uint64(epoch)}
	bytes := C.GoBytes(payload, C.int(n))
	d.w.callbackStarted()
	defer d.w.callbackEnded()
	defer func() {
		if v := recover(); v != nil {
			d.w.panicked(v)
			ack = C.int32_t(AckLater)
		}
	}()
	return C.int32_t(d.h(token, bytes))
}
