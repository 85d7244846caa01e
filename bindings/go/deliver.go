package timerwheel

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Batched delivery of one-shot fires. On a wheel on the real clock, the C callback of a
// one-shot timer does not call into Go: it queues the timer's handle (cgo.go) and returns.
// Deliverers, goroutines each locked to a thread of its own, take the queue in batches,
// each in one call into C, and run the funcs. A deliverer that finds no other waiting for
// the queue starts one more (up to maxDeliverers), so that a func that blocks holds up at
// most the rest of its own batch, and the queue is always being taken.
//
// The C timer has ended when its handle is queued, so Stop and Reset meet it as a
// one-shot whose callback started and whose func has not: Stop wins and begin skips the
// run, exactly as when the callback waits for the Timer's lock. The thread of a run is
// marked (cEnterRun) so that StopWait and Close from the func know it.
//
// Periodic timers, wheels on a virtual clock (whose funcs run inside Advance) and wheels
// that count slow callbacks (the library times the callback) keep the direct callback.

const (
	// deliverBatch is the most fires one call into C takes.
	deliverBatch = 64
	// maxDeliverers bounds the deliverers (and their threads).
	maxDeliverers = 256
)

// deliverers counts the deliverers started.
var deliverers atomic.Int32

var startFirstDeliverer sync.Once

// startDelivery starts the first deliverer, once per process, before the first batched
// add.
func startDelivery() {
	startFirstDeliverer.Do(startDeliverer)
}

// startDeliverer starts one more deliverer, unless there are maxDeliverers.
func startDeliverer() {
	if deliverers.Add(1) > maxDeliverers {
		deliverers.Add(-1)
		return
	}
	go deliver()
}

// deliver takes queued fires in batches for ever and runs each. It waits inside C only
// after yielding once: a goroutine inside a call into C keeps its processor, and the
// goroutines that the funcs made ready wait on it until the runtime takes it back.
func deliver() {
	runtime.LockOSThread() // for ever: the thread marks the run under way
	handles := make([]uintptr, deliverBatch)
	wait := true
	for {
		n, lastIdle := cTakeFires(handles, wait)
		if n == 0 {
			cAccounted()
			runtime.Gosched()
			wait = true
			continue
		}
		wait = false
		if lastIdle {
			startDeliverer()
		}
		deliverBatchOf(handles[:n])
	}
}

// deliverBatchOf counts the fires of handles in their wheels' runs, tells C so, and runs
// them in order.
func deliverBatchOf(handles []uintptr) {
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
			runDelivered(t, handles[i])
		}
	}
}

// runDelivered runs the func of a delivered fire, its thread marked as running it.
func runDelivered(t *Timer, h uintptr) {
	defer t.w.runs.Done()
	cEnterRun(h, t.w.serial)
	defer cLeaveRun()
	fire(t, h)
}

// awaitDelivered waits, once the C wheel is destroyed (no fire of w is queued after), until
// the fires of w that were queued have run, but for the run of w that calls it, if any
// (Close from a func of w), which cannot wait for itself.
func (w *Wheel) awaitDelivered() {
	if !w.batched {
		return
	}
	queued := cQueuedFires()
	for !cAccountedThrough(queued) {
		time.Sleep(20 * time.Microsecond)
	}
	if cCurrentWheel() != w.serial {
		w.runs.Wait()
	}
}
