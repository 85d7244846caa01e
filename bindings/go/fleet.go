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

// FleetSettings are how a fleet node runs (tw_fleet_settings in C); a zero field takes the
// library's default.
type FleetSettings struct {
	TTL      time.Duration // the lease TTL, renewed every fifth of it: default 10 s, at least 100 ms
	Window   time.Duration // how far ahead the node loads its shards' timers: default 60 s, at least TTL / 2
	Poll     time.Duration // the longest wait between two claims of due timers: default 500 ms
	Batch    int           // timers claimed per transaction: default 500
	NoListen bool          // true: adds and resets from other nodes wait for the poll (no LISTEN/NOTIFY)
	Buffer   int           // changes kept while PostgreSQL does not answer: default 10000
	// MissedPoints is what becomes of the points of a periodic timer that fell due while no
	// node held its shard: MissedEach (the default) or MissedCoalesce (docs/contract.md,
	// "Fleet store"); NewFleet refuses another value (ErrInvalid).
	MissedPoints MissedPoints
}

// FleetToken names one fire of a fleet timer; a fire delivered again (by the shard's next
// owner) has the same Key, Name, Occurrence and Version under a greater Epoch. Store it with
// the fire's effect, then Ack it.
type FleetToken struct {
	Key        uint64
	Name       string    // the handler's name
	Occurrence time.Time // the scheduled deadline of this fire, to the millisecond
	Version    int64     // the timer's incarnation: a replaced or re-added timer has a new one
	Shard      int32     // the key's shard
	Epoch      int64     // the shard's epoch when the fire was delivered: Ack refuses it (ErrFenced) once the lease moved on
}

// FleetHandler handles the fires of the fleet timers of one name, on one of the node's
// threads (two at once at most). payload is the handler's own copy.
type FleetHandler func(token FleetToken, payload []byte) Ack

// FleetError is a refused fleet call: Op, the library's message (never the connection
// string) and the error it matches with errors.Is (ErrUnreachable, ErrFenced, ErrStore,
// ...).
type FleetError struct {
	Op      string
	Message string
	Err     error
}

func (e *FleetError) Error() string {
	return "timerwheel: " + e.Op + ": " + e.Message
}

// Unwrap makes a FleetError match its status's error.
func (e *FleetError) Unwrap() error { return e.Err }

// Fleet is a node of a fleet on PostgreSQL (docs/fleet.md): register handlers (Handle),
// Join with a connection string and a node name, then add, reset, delete and acknowledge
// timers. Close it (it leaves first).
type Fleet struct {
	c    cFleet
	gate gate

	mu      sync.Mutex
	handles []cgo.Handle
}

// NewFleet creates a node with s, not joined yet.
func NewFleet(s FleetSettings) (*Fleet, error) {
	if s.TTL < 0 || s.Window < 0 || s.Poll < 0 || s.Batch < 0 || s.Buffer < 0 {
		return nil, fmt.Errorf("negative fleet setting %+v: %w", s, ErrInvalid)
	}
	if s.MissedPoints != MissedEach && s.MissedPoints != MissedCoalesce {
		return nil, fmt.Errorf("MissedPoints %d, not MissedEach or MissedCoalesce: %w", s.MissedPoints, ErrInvalid)
	}
	c, status := cFleetCreate(s)
	if err := statusErr(status); err != nil {
		return nil, err
	}
	return &Fleet{c: c}, nil
}

// Handle registers h for the timers named name, before Join; a name at most once
// (ErrInvalid), ErrBusy after Join. A panic in h is recovered; its fire stays
// unacknowledged (the shard's next owner delivers it again).
func (f *Fleet) Handle(name string, h FleetHandler) error {
	if h == nil {
		return errNilFunc
	}
	handle := cgo.NewHandle(h)
	err := f.call("Handle", func() C.tw_status {
		return cFleetHandlerRegister(f.c, name, uintptr(handle))
	})
	if err != nil {
		handle.Delete()
		return err
	}
	f.mu.Lock()
	f.handles = append(f.handles, handle)
	f.mu.Unlock()
	return nil
}

// Join joins the fleet at conninfo (a libpq connection string) as nodeName and starts
// firing the timers of the shards it gets; handlers may run before it returns. The schema
// must exist (it is created by an explicit call, never here: ErrStore). ErrInvalid for a
// string that cannot be parsed or settings out of range, ErrUnreachable when PostgreSQL
// does not answer; it can be called again after a failure. ErrBusy once joined.
func (f *Fleet) Join(conninfo, nodeName string) error {
	return f.call("Join", func() C.tw_status { return cFleetJoin(f.c, conninfo, nodeName) })
}

// Add adds t through the node: nil once committed. ErrUnreachable: PostgreSQL did not
// answer and the change waits in the node's buffer, written in order when it answers (it
// is not lost unless the process ends); ErrFull: it did not answer and the buffer is full,
// nothing kept. ErrExists, ErrNoHandler (no handler of this node under t.Name).
func (f *Fleet) Add(t DurableTimer) error {
	if t.Period < 0 {
		return errNonPositivePeriod
	}
	return f.call("Add", func() C.tw_status { return cFleetAdd(f.c, t) })
}

// Reset moves the next deadline of the timer (key, name) to when; ErrNotFound if there is
// none, and as Add.
func (f *Fleet) Reset(key uint64, name string, when time.Time) error {
	return f.call("Reset", func() C.tw_status { return cFleetReset(f.c, key, name, when) })
}

// Delete removes the timer (key, name); ErrNotFound if there is none, and as Add.
func (f *Fleet) Delete(key uint64, name string) error {
	return f.call("Delete", func() C.tw_status { return cFleetDelete(f.c, key, name) })
}

// Ack acknowledges tokens, shard by shard; it returns how many matched an unacknowledged
// fire. ErrFenced: a token's shard moved past its epoch (its tokens are refused and
// delivered again by the shard's new owner; the other shards' are acknowledged).
func (f *Fleet) Ack(tokens ...FleetToken) (int, error) {
	var acked int
	err := f.call("Ack", func() (status C.tw_status) {
		acked, status = cFleetAck(f.c, tokens)
		return status
	})
	return acked, err
}

// Flush writes the changes buffered while PostgreSQL did not answer; it returns how many
// still wait, with ErrUnreachable while it does not answer.
func (f *Fleet) Flush() (int, error) {
	var pending int
	err := f.call("Flush", func() (status C.tw_status) {
		pending, status = cFleetFlush(f.c)
		return status
	})
	return pending, err
}

// Leave writes what is buffered, stops firing and hands every shard back at once.
// ErrUnreachable while PostgreSQL does not answer and changes wait (the node stays and
// keeps them); ErrBusy from one of the node's handlers; ErrClosed once it left.
func (f *Fleet) Leave() error {
	return f.call("Leave", func() C.tw_status { return cFleetLeave(f.c) })
}

// Close leaves the fleet if it joined and frees the node; later calls return ErrClosed.
// From one of its handlers it returns ErrBusy, and while PostgreSQL does not answer
// ErrUnreachable: then it frees nothing (a buffered change is kept; Close again later).
func (f *Fleet) Close() error {
	if err := f.Leave(); errors.Is(err, ErrBusy) || errors.Is(err, ErrUnreachable) {
		return err
	}
	if !f.gate.close() {
		return nil
	}
	_ = cFleetDestroy(f.c)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, h := range f.handles {
		h.Delete()
	}
	f.handles = nil
	return nil
}

// call runs call inside the node's gate and makes the error of its status, with the
// library's message.
func (f *Fleet) call(op string, call func() C.tw_status) error {
	if !f.gate.enter() {
		return ErrClosed
	}
	defer f.gate.exit()
	err := statusErr(call())
	if err == nil {
		return nil
	}
	if msg := cFleetError(f.c); msg != "" {
		return &FleetError{Op: op, Message: msg, Err: err}
	}
	return err
}

// twgoFleet is the C handler of every Go fleet handler.
//
//export twgoFleet
func twgoFleet(handle C.uintptr_t, key C.uint64_t, name *C.char, occurrence C.int64_t,
	version C.int64_t, shard C.int32_t, epoch C.int64_t, payload unsafe.Pointer,
	n C.size_t) (ack C.int32_t) {
	h := cgo.Handle(handle).Value().(FleetHandler)
	token := FleetToken{Key: uint64(key), Name: C.GoString(name),
		Occurrence: time.UnixMilli(int64(occurrence)), Version: int64(version),
		Shard: int32(shard), Epoch: int64(epoch)}
	bytes := C.GoBytes(payload, C.int(n))
	defer func() {
		if recover() != nil {
			ack = C.int32_t(AckLater)
		}
	}()
	return C.int32_t(h(token, bytes))
}
