package timerwheel

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Batched delivery of one-shot fires. On a wheel on the real clock, the C callback of a
// one-shot timer does not call into Go: it queues the timer's handle (cgo.go) and returns.
// One goroutine, the deliverer, takes the queue in batches, each in one call into C, and
// starts a goroutine per fire that runs the func, as time.AfterFunc does: a func that
// blocks delays no other. The C timer has ended when its handle is queued, so Stop and
// Reset meet it as a one-shot whose callback started and whose func has not (begin skips
// its run then), exactly as when the callback waits for the Timer's lock.
//
// Periodic timers, wheels on a virtual clock (whose funcs run inside Advance) and wheels
// that count slow callbacks (the library times the callback) keep the direct callback.

// deliverBatch is the most fires one call into C takes.
const deliverBatch = 512

// delivery is the state of the deliverer.
var delivery struct {
	start sync.Once
	// taken is how many queued fires the deliverer has handed to their wheels (each
	// counted in its wheel's runs): every fire queued before that count is accounted.
	taken atomic.Uint64
}

// startDelivery starts the deliverer, once per process, before the first batched add.
func startDelivery() {
	delivery.start.Do(func() { go deliver() })
}

// deliver takes the queued fires in batches for ever and starts the run of each.
func deliver() {
	handles := make([]uintptr, deliverBatch)
	for {
		n, taken := cTakeFires(handles)
		for _, h := range handles[:n] {
			if t := timers.fired(h); t != nil {
				t.w.runs.Add(1)
				go runDelivered(t, h)
			}
		}
		delivery.taken.Store(taken)
	}
}

// runDelivered runs the func of a delivered fire on a thread of its own for the run's
// length, marked as the thread of t's run for StopWait and Close.
func runDelivered(t *Timer, h uintptr) {
	defer t.w.runs.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
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
	for delivery.taken.Load() < queued {
		time.Sleep(20 * time.Microsecond)
	}
	if cCurrentWheel() != w.serial {
		w.runs.Wait()
	}
}
