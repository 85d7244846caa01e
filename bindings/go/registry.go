package timerwheel

import (
	"math/bits"
	"sync"
)

// A slot handle names a registry entry: the entry's index in the low half of a uintptr, its
// generation in the high half. It is what a C timer carries as user_data, so no Go pointer
// ever crosses into C; a stale handle (its entry released and perhaps reused) finds nothing.
const (
	genShift  = bits.UintSize / 2
	indexMask = uintptr(1)<<genShift - 1
)

// registry holds the Go side of every C timer of every wheel: the *Timer whose func a
// firing C timer runs. Releasing an entry is what ends a timer on the Go side.
type registry struct {
	mu      sync.Mutex
	entries []entry
	free    []uintptr // indexes of released entries
	live    int
}

type entry struct {
	t       *Timer // nil when released
	gen     uintptr
	oneShot bool // released when it fires
}

// add registers t and returns its slot handle.
func (r *registry) add(t *Timer, oneShot bool) uintptr {
	r.mu.Lock()
	defer r.mu.Unlock()
	var i uintptr
	if n := len(r.free); n > 0 {
		i = r.free[n-1]
		r.free = r.free[:n-1]
	} else {
		i = uintptr(len(r.entries))
		r.entries = append(r.entries, entry{gen: 1})
	}
	e := &r.entries[i]
	e.t, e.oneShot = t, oneShot
	r.live++
	return e.gen<<genShift | i
}

// fired returns the timer of a firing slot (nil if it was released), releasing the slot of
// a one-shot timer, which never fires again.
func (r *registry) fired(h uintptr) *Timer {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.find(h)
	if e == nil {
		return nil
	}
	t := e.t
	if e.oneShot {
		r.releaseLocked(e, h&indexMask)
	}
	return t
}

// release ends a slot; it reports whether the slot was live.
func (r *registry) release(h uintptr) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.find(h)
	if e == nil {
		return false
	}
	r.releaseLocked(e, h&indexMask)
	return true
}

// alive reports whether a slot is live.
func (r *registry) alive(h uintptr) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.find(h) != nil
}

// releaseWheel ends every live slot of w (w was destroyed) and returns how many there were.
func (r *registry) releaseWheel(w *Wheel) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for i := range r.entries {
		if e := &r.entries[i]; e.t != nil && e.t.w == w {
			r.releaseLocked(e, uintptr(i))
			n++
		}
	}
	return n
}

// countWheel is the number of live slots of w.
func (r *registry) countWheel(w *Wheel) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for i := range r.entries {
		if e := &r.entries[i]; e.t != nil && e.t.w == w {
			n++
		}
	}
	return n
}

// find returns the live entry a handle names, or nil.
func (r *registry) find(h uintptr) *entry {
	i := h & indexMask
	if i >= uintptr(len(r.entries)) {
		return nil
	}
	e := &r.entries[i]
	if e.t == nil || e.gen != h>>genShift {
		return nil
	}
	return e
}

func (r *registry) releaseLocked(e *entry, i uintptr) {
	e.t = nil
	e.gen = (e.gen + 1) & indexMask
	r.free = append(r.free, i)
	r.live--
}
