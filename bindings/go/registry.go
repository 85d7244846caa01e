package timerwheel

import (
	"math/bits"
	"sync"
)

// A handle names a registry entry: the entry's index in the low half of a uintptr, a
// generation in the high half. It is what a C timer carries as user_data, so no Go pointer
// ever crosses into C. Every add takes a new generation, and an entry is found only by the
// handle its timer holds now, so a stale handle (its timer stopped, the entry perhaps
// reused) finds nothing.
const (
	genShift  = bits.UintSize / 2
	indexMask = uintptr(1)<<genShift - 1
)

// sweepBatch is how many released entries wait before they are cleared together.
const sweepBatch = 256

// registry holds the Go side of every C timer of every wheel: the *Timer whose func a
// firing C timer runs. Releasing an entry is what ends a timer on the Go side.
//
// A release only clears the timer's handle (its cache line is at hand) and queues the
// entry; the entries are cleared in batches, where their scattered cache misses overlap
// instead of each stalling a Stop.
type registry struct {
	mu       sync.Mutex
	entries  []*Timer
	free     []uintptr // cleared entries, ready for reuse
	released []uintptr // released entries not yet cleared
	gen      uintptr
	live     int
}

// add registers t under a new handle, stores the handle in t.handle and returns it.
func (r *registry) add(t *Timer) uintptr {
	r.mu.Lock()
	var i uintptr
	if n := len(r.free); n > 0 {
		i = r.free[n-1]
		r.free = r.free[:n-1]
	} else {
		i = uintptr(len(r.entries))
		r.entries = append(r.entries, nil)
	}
	r.gen++
	h := (r.gen&indexMask)<<genShift | i
	r.entries[i] = t
	t.handle = h
	r.live++
	r.mu.Unlock()
	return h
}

// fired returns the timer of a firing handle (nil if it was released), releasing the entry
// of a one-shot timer, which never fires again.
func (r *registry) fired(h uintptr) *Timer {
	r.mu.Lock()
	t := r.find(h)
	if t != nil && t.periodMs == 0 {
		r.releaseLocked(t)
	}
	r.mu.Unlock()
	return t
}

// release ends t's handle if it is live.
func (r *registry) release(t *Timer) {
	r.mu.Lock()
	if t.handle != 0 {
		r.releaseLocked(t)
	}
	r.mu.Unlock()
}

// alive reports whether t's handle is live.
func (r *registry) alive(t *Timer) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return t.handle != 0
}

// releaseWheel ends every live handle of w (w was destroyed) and returns how many there
// were.
func (r *registry) releaseWheel(w *Wheel) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for i, t := range r.entries {
		if r.liveAt(uintptr(i), t) && t.w == w {
			r.releaseLocked(t)
			n++
		}
	}
	r.sweep()
	return n
}

// countWheel is the number of live handles of w.
func (r *registry) countWheel(w *Wheel) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for i, t := range r.entries {
		if r.liveAt(uintptr(i), t) && t.w == w {
			n++
		}
	}
	return n
}

// find returns the timer a live handle names, or nil.
func (r *registry) find(h uintptr) *Timer {
	i := h & indexMask
	if i >= uintptr(len(r.entries)) {
		return nil
	}
	if t := r.entries[i]; t != nil && t.handle == h {
		return t
	}
	return nil
}

// liveAt reports whether entry i holds the live handle of t.
func (r *registry) liveAt(i uintptr, t *Timer) bool {
	return t != nil && t.handle != 0 && t.handle&indexMask == i
}

func (r *registry) releaseLocked(t *Timer) {
	r.released = append(r.released, t.handle&indexMask)
	t.handle = 0
	r.live--
	if len(r.released) >= sweepBatch {
		r.sweep()
	}
}

// sweep clears the released entries and makes them free.
func (r *registry) sweep() {
	for _, i := range r.released {
		r.entries[i] = nil
	}
	r.free = append(r.free, r.released...)
	r.released = r.released[:0]
}
