package timerwheel

import (
	"errors"
	"sync"
)

// Deferred deletes. On a batched wheel (deliver.go), Stop of a one-shot func timer outside
// a group decides the race with the fire in Go, under the Timer's lock, as it already did
// for a fire the library had started: it clears Timer.handle, so that the fire, if it
// comes, finds its handle gone in begin and skips the func. Stop then returns true at once
// and leaves the C timer, with its registry entry, to a wheel's stopQueue, which deletes
// the C timers of up to stopBatch Stops in one tw_delete_many and releases their entries:
// one call into C and one pass over scattered memory for many Stops instead of one each
// (a lone tw_delete waits on each of its cache misses in turn).
//
// A C timer whose delete finds its callback started (it fired before the batch reached the
// library) ended through the fire: its entry was released there, and the library counted
// a fire that the Go view counts as a stop (unstarted). Every call that reads or exports
// the library's view (Stats, StatsRecent, MetricsText, Export) and Close flush the queue
// first, so that a Stop that has returned is counted as a stop there.

const (
	// stopShards is how many locks a wheel's queue is split over.
	stopShards = 8
	// stopBatch is how many Stops a shard holds before it deletes their C timers.
	stopBatch = 64
)

// stopQueue holds the C timers of Stops whose delete has not been made yet.
type stopQueue struct {
	shards [stopShards]stopShard
}

// stopShard is one lock's part of a stopQueue. Its lock is held while the batch is being
// deleted, so that a flush that takes it finds every earlier Stop's C timer deleted.
type stopShard struct {
	mu       sync.Mutex
	ids      []uint64  // the C timers to delete
	handles  []uintptr // their registry handles, in the same order
	statuses []uint32  // tw_delete_many's results, reused
	_        [48]byte  // keeps two shards' locks off one cache line
}

// deferStop queues the C timer id of handle h, which a Stop has just stopped, for
// deletion. The caller is inside w's gate, so that Close, which flushes once the gate is
// closed, finds it.
func (w *Wheel) deferStop(id uint64, h uintptr) {
	s := &w.stops.shards[h%stopShards]
	s.mu.Lock()
	first := len(s.ids) == 0
	if s.ids == nil {
		s.ids = make([]uint64, 0, stopBatch)
		s.handles = make([]uintptr, 0, stopBatch)
		s.statuses = make([]uint32, stopBatch)
	}
	s.ids = append(s.ids, id)
	s.handles = append(s.handles, h)
	if len(s.ids) == stopBatch {
		w.deleteStopped(s)
	}
	s.mu.Unlock()
	if first {
		janitorWatch(w) // flushed in time even if no other Stop comes (janitor.go)
	}
}

// flushStops deletes the C timers of every Stop so far. The caller is inside w's gate, or
// is Close once it has closed the gate.
func (w *Wheel) flushStops() {
	if !w.batched {
		return
	}
	for i := range w.stops.shards {
		s := &w.stops.shards[i]
		s.mu.Lock()
		w.deleteStopped(s)
		s.mu.Unlock()
	}
}

// deleteStopped deletes the C timers queued in s and empties it. The caller holds s.mu.
func (w *Wheel) deleteStopped(s *stopShard) {
	if len(s.ids) == 0 {
		return
	}
	statuses := s.statuses[:len(s.ids)]
	cDeleteInto(w.c, s.ids, statuses)
	for i, status := range statuses {
		switch err := statusErr(status); {
		case err == nil:
			timers.release(s.handles[i])
		case errors.Is(err, ErrNotFound):
			w.unstarted.stopped.Add(1) // the fire found its handle gone and ran nothing
		}
	}
	s.ids, s.handles = s.ids[:0], s.handles[:0]
}

// deferrable reports whether t's Stop may leave the delete of its C timer to the wheel's
// stopQueue: a one-shot func timer, on a batched wheel, in no group.
func (t *Timer) deferrable() bool {
	return t.period == 0 && t.C == nil && t.group == nil && t.w.batched
}
