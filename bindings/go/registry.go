package timerwheel

import (
	"math/bits"
	"sync"
)

// A handle names a registry entry: the entry's index in the low half of a uintptr, a
// generation in the high half. It is what a C timer carries as user_data, so no Go pointer
// ever crosses into C. Every add takes a new generation, so a stale handle (its entry
// cleared, perhaps reused) finds nothing.
const (
	genShift  = bits.UintSize / 2
	indexMask = uintptr(1)<<genShift - 1
)

// sweepBatch is how many released entries wait before they are cleared together.
const sweepBatch = 256

// registry holds the Go side of every C timer of every wheel: the *Timer whose func a
// firing C timer runs. Each C timer has an entry of its own (a Timer that Reset schedules
// again gets a new one while the old may still be firing). Releasing its entry is what
// ends a C timer on the Go side.
//
// Stop releases an entry only by queueing its handle: the entries are cleared in batches,
// where their scattered cache misses overlap instead of each stalling a Stop. Until then a
// released entry is still found, which matters only for a periodic run that the library
// had started when Stop was called: that run goes ahead, as the library's contract says.
type registry struct {
	mu       sync.Mutex
	entries  []entry
	free     []uintptr // indexes of cleared entries
	released []uintptr // handles released and not yet cleared
	gen      uintptr
	live     int
}

type entry struct {
	t   *Timer // nil when cleared
	gen uintptr
}

// add registers t under a new handle and returns it.
func (r *registry) add(t *Timer) uintptr {
	r.mu.Lock()
	var i uintptr
	if n := len(r.free); n > 0 {
		i = r.free[n-1]
		r.free = r.free[:n-1]
	} else {
		i = uintptr(len(r.entries))
		r.entries = append(r.entries, entry{})
	}
	r.gen = (r.gen + 1) & indexMask
	r.entries[i] = entry{t: t, gen: r.gen}
	h := r.gen<<genShift | i
	r.live++
	r.mu.Unlock()
	return h
}

// fired returns the timer of a firing handle (nil if its entry was cleared), ending the
// entry of a one-shot timer, which never fires again.
func (r *registry) fired(h uintptr) *Timer {
	r.mu.Lock()
	var t *Timer
	if e := r.find(h); e != nil {
		t = e.t
		if t.period == 0 {
			r.clear(h & indexMask)
			r.live--
		}
	}
	r.mu.Unlock()
	return t
}

// release ends the entry of a handle whose C timer ended without firing (stopped, or
// never added).
func (r *registry) release(h uintptr) {
	r.mu.Lock()
	r.released = append(r.released, h)
	r.live--
	if len(r.released) >= sweepBatch {
		r.sweep()
	}
	r.mu.Unlock()
}

// releaseWheel ends every live entry of w (w was destroyed) and returns how many there
// were.
func (r *registry) releaseWheel(w *Wheel) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweep()
	n := 0
	for i := range r.entries {
		if t := r.entries[i].t; t != nil && t.w == w {
			r.clear(uintptr(i))
			n++
		}
	}
	r.live -= n
	return n
}

// countWheel is the number of live entries of w.
func (r *registry) countWheel(w *Wheel) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweep()
	n := 0
	for _, e := range r.entries {
		if e.t != nil && e.t.w == w {
			n++
		}
	}
	return n
}

// lookup returns the timer of each handle, nil where its entry was cleared.
func (r *registry) lookup(handles []uintptr) []*Timer {
	r.mu.Lock()
	defer r.mu.Unlock()
	found := make([]*Timer, len(handles))
	for i, h := range handles {
		if e := r.find(h); e != nil {
			found[i] = e.t
		}
	}
	return found
}

// find returns the entry a handle names, or nil.
func (r *registry) find(h uintptr) *entry {
	i := h & indexMask
	if i >= uintptr(len(r.entries)) {
		return nil
	}
	if e := &r.entries[i]; e.t != nil && e.gen == h>>genShift {
		return e
	}
	return nil
}

// clear empties entry i and makes it free.
func (r *registry) clear(i uintptr) {
	r.entries[i].t = nil
	r.free = append(r.free, i)
}

// sweep clears the released entries.
func (r *registry) sweep() {
	for _, h := range r.released {
		if r.find(h) != nil { // always true while every release is of a live handle
			r.clear(h & indexMask)
		}
	}
	r.released = r.released[:0]
}
