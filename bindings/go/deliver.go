package timerwheel

import (
	"os"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Batched delivery of one-shot fires. On a wheel on the real clock, the C callback of a
// one-shot timer does not call into Go: it queues the timer's handle (cgo.go) and returns.
// Deliverers, goroutines that live as long as the process, take the queue in batches,
// each in one call into C, and run the funcs. A deliverer that finds no other waiting for
// the queue starts one more (up to maxDeliverers), so that a func that blocks holds up at
// most the rest of its own batch, and the queue is always being taken.
//
// A deliverer that finds the queue empty parks in Go, reading a byte from a pipe (the
// bell) through the runtime's poller, and the C side writes a byte for one parked
// deliverer when a fire lands in the empty queue (or when a take leaves some behind). A
// deliverer waiting inside a call into C instead would keep a thread, and its processor
// until the runtime takes it back (up to 10 ms later when the process was idle), while
// the deliverers it woke wait for one: at a million fires over 2 s that made hundreds of
// threads and a p99 several times time.AfterFunc's.
//
// The C timer has ended when its handle is queued, so Stop and Reset meet it as a
// one-shot whose callback started and whose func has not: Stop wins and begin skips the
// run, exactly as when the callback waits for the Timer's lock. StopWait and Close from a
// delivered func know it by the deliverer they run on (currentDeliverer).
//
// Periodic timers, wheels on a virtual clock (whose funcs run inside Advance) and wheels
// that count slow callbacks (the library times the callback) keep the direct callback.

const (
	// deliverBatch is the most fires one call into C takes.
	deliverBatch = 64
	// maxDeliverers bounds the deliverers (and their threads).
	maxDeliverers = 256
)

// deliverers counts the deliverers started; deliverer k (from 1) is deliverersByDepth[k-1].
var (
	deliverers        atomic.Int32
	deliverersByDepth [maxDeliverers]atomic.Pointer[deliverer]
)

// deliverer is the state of one deliverer goroutine, read and written by it alone.
type deliverer struct {
	t *Timer  // whose delivered func it runs; nil between runs
	h uintptr // the handle of that run
}

var (
	startFirstDeliverer sync.Once
	// bell is the read end of the pipe parked deliverers wait on; nil when it could not
	// be made (they then wait inside C).
	bell *os.File
)

// startDelivery makes the bell and starts the first deliverer, once per process, before
// the first batched add.
func startDelivery() {
	startFirstDeliverer.Do(func() {
		if fd := cBellOpen(); fd >= 0 {
			bell = os.NewFile(uintptr(fd), "timerwheel-bell") // non-blocking: the poller's
		}
		startDeliverer()
	})
}

// startDeliverer starts one more deliverer, unless there are maxDeliverers.
func startDeliverer() {
	k := deliverers.Add(1)
	if k > maxDeliverers {
		deliverers.Add(-1)
		return
	}
	go descend(int(k), int(k))
}

// descend calls deliver k frames deep: a goroutine knows which deliverer it is by how many
// descend frames its stack holds (currentDeliverer), as Go gives goroutines no identity.
//
//go:noinline
func descend(k, frames int) {
	if frames > 1 {
		descend(k, frames-1)
		return
	}
	deliver(k)
}

// currentDeliverer is the deliverer the calling goroutine is, or nil. It walks the stack:
// for the rare calls that need it (StopWait, Close).
func currentDeliverer() *deliverer {
	pcs := make([]uintptr, 2*maxDeliverers)
	n := runtime.Callers(1, pcs)
	for n == len(pcs) { // the stack may be deeper: the descend frames are its outermost
		pcs = make([]uintptr, 2*len(pcs))
		n = runtime.Callers(1, pcs)
	}
	frames := runtime.CallersFrames(pcs[:n])
	depth := 0
	for {
		f, more := frames.Next()
		if f.Function == descendName {
			depth++
		}
		if !more {
			break
		}
	}
	if depth == 0 {
		return nil
	}
	return deliverersByDepth[depth-1].Load()
}

// descendName is descend's name in a stack frame.
var descendName = runtime.FuncForPC(reflect.ValueOf(descend).Pointer()).Name()

// deliveredHandle is the handle of the delivered fire whose func the calling goroutine
// runs; 0 when none.
func deliveredHandle() uintptr {
	if d := currentDeliverer(); d != nil {
		return d.h
	}
	return 0
}

// deliver is deliverer k: it takes queued fires in batches for ever and runs each. It
// parks on the bell when the queue is empty. Without a bell it waits inside C, and only
// after yielding once: a goroutine inside a call into C keeps its processor, and the
// goroutines that the funcs made ready wait on it until the runtime takes it back.
func deliver(k int) {
	d := &deliverer{}
	deliverersByDepth[k-1].Store(d)
	handles := make([]uintptr, deliverBatch)
	var rung [1]byte
	wait := true
	for {
		n, lastIdle, park := cTakeFires(handles, wait)
		if n == 0 {
			cAccounted()
			if park {
				_, _ = bell.Read(rung[:]) // one byte a rung deliverer; the pipe stays open
				continue
			}
			runtime.Gosched()
			wait = true
			continue
		}
		wait = bell != nil // with the bell, a take that finds none parks at once
		if lastIdle {
			startDeliverer()
		}
		d.deliver(handles[:n])
	}
}

// deliver counts the fires of handles in their wheels' runs, tells C so, and runs them in
// order.
func (d *deliverer) deliver(handles []uintptr) {
	var batch [deliverBatch]*Timer
	for i, h := range handles {
		if t := timers.fired(h); t != nil {
			t.w.runs.Add(1)
			batch[i] = t
		}
	}
	cAccounted()
	for i, t := range batch[:len(handles)] {
		if t != nil {
			d.run(t, handles[i])
		}
	}
}

// run runs the func of a delivered fire, noting that d runs it.
func (d *deliverer) run(t *Timer, h uintptr) {
	defer t.w.runs.Done()
	d.t, d.h = t, h
	defer func() { d.t, d.h = nil, 0 }()
	fire(t, h)
}

// awaitDelivered waits, once tw_destroy has returned (no fire of w is queued after), until
// the fires of w that were queued have run (or been skipped: run.go), but for the run of w
// that calls it, if any (Close from a func of w), which cannot wait for itself.
func (w *Wheel) awaitDelivered() {
	w.awaitTaken()
	if d := currentDeliverer(); w.batched && (d == nil || d.t == nil || d.t.w != w) {
		w.runs.Wait()
	}
}

// awaitTaken waits, once the wheel has stopped (no fire of w is queued after), until the
// deliverers have taken the fires of w that were queued, and so ended their registry
// entries: Close then does not count them as pending timers it discarded, as the library
// counted them as fired.
func (w *Wheel) awaitTaken() {
	if !w.batched {
		return
	}
	queued := cQueuedFires()
	for !cAccountedThrough(queued) {
		time.Sleep(20 * time.Microsecond)
	}
}
