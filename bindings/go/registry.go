package timerwheel

import (
	"math/bits"
	"math/rand"
	"sync"
)

// A handle names a registry entry: its shard in the lowest shardBits bits, its index in
// the shard above them (together in the low half of a uintptr), a generation in the high
// half. It is what a C timer carries as user_data, so no Go pointer ever crosses into C.
// Every add takes a new generation of its shard, so a stale handle (its entry cleared,
// perhaps reused) finds nothing.
const (
	genShift  = bits.UintSize / 2
	indexMask = uintptr(1)<<genShift - 1
	shardBits = 6
	shards    = 1 << shardBits
	shardMask = uintptr(shards - 1)
)

// sweepBatch is how many released entries of a shard wait before they are cleared together.
const sweepBatch = 256

// A shard keeps its entries in chunks of chunkSize, made as it grows and never moved: a
// slice that doubled would copy every entry (through the collector's write barrier while
// it marks) and leave the old array behind, on the path of an add.
const (
	chunkBits = 8
	chunkSize = 1 << chunkBits
)

// registry holds the Go side of every C timer of every wheel: the *Timer whose func a
// firing C timer runs. Each C timer has an entry of its own (a Timer that Reset schedules
// again gets a new one while the old may still be firing). Releasing its entry is what
// ends a C timer on the Go side.
//
// The entries are spread over shards, each with its own lock: an add takes a shard at
// random, and a Stop or a firing locks only the shard its handle names, so goroutines and
// the library's threads rarely wait for each other here.
//
// Stop releases an entry only by queueing its handle: the entries are cleared in batches,
// where their scattered cache misses overlap instead of each stalling a Stop. Until then a
// released entry is still found (by a periodic run that the library had started when Stop
// was called; begin skips it, as the handle is no longer the Timer's). The janitor
// (janitor.go) clears what waits longer than a round or two, so that a released entry
// does not keep its Timer, and the Timer's Wheel, reachable.
type registry struct {
	shards [shards]shard
}

// shard is one lock's part of the registry. Its indexes are local: handle bits above
// shardBits.
type shard struct {
	mu     sync.Mutex
	chunks []*[chunkSize]entry
	made   uintptr // entries made so far, live or cleared; they fill the chunks in order
	// freeHead is 1 + the index of the first cleared entry, 0 when none; each cleared
	// entry's gen holds the next one the same way. Linked through the entries, the free
	// list never grows a slice: a firing allocates nothing (an allocation per fire brings
	// the collector's mark phase, with its idle workers on every processor, into the
	// middle of a burst of fires).
	freeHead uintptr
	released []uintptr // handles released and not yet cleared
	aged     []uintptr // of those, the ones released before the janitor's last round
	gen      uintptr
	live     int
	_        [64]byte // keeps two shards' locks off one cache line
}

type entry struct {
	t   *Timer  // nil when cleared
	gen uintptr // the generation of its handle; when cleared, the free list's link
}

// shardOf is the shard a handle names.
func (r *registry) shardOf(h uintptr) *shard {
	return &r.shards[h&shardMask]
}

// add registers t under a new handle and returns it.
func (r *registry) add(t *Timer) uintptr {
	n := uintptr(rand.Uint32()) & shardMask
	s := &r.shards[n]
	s.mu.Lock()
	var i uintptr
	if s.freeHead != 0 {
		i = s.freeHead - 1
		s.freeHead = s.entry(i).gen
	} else {
		i = s.made
		if i%chunkSize == 0 {
			s.chunks = append(s.chunks, new([chunkSize]entry))
		}
		s.made++
	}
	s.gen = (s.gen + 1) & indexMask
	*s.entry(i) = entry{t: t, gen: s.gen}
	h := s.gen<<genShift | i<<shardBits | n
	s.live++
	s.mu.Unlock()
	return h
}

// fired returns the timer of a firing handle (nil if its entry was cleared), ending the
// entry of a one-shot timer, which never fires again.
func (r *registry) fired(h uintptr) *Timer {
	s := r.shardOf(h)
	s.mu.Lock()
	var t *Timer
	if e := s.find(h); e != nil {
		t = e.t
		if t.period == 0 {
			s.clear(local(h))
			s.live--
		}
	}
	s.mu.Unlock()
	return t
}

// release ends the entry of a handle whose C timer ended without firing (stopped, or
// never added).
func (r *registry) release(h uintptr) {
	s := r.shardOf(h)
	s.mu.Lock()
	s.released = append(s.released, h)
	first := len(s.released) == 1
	s.live--
	if len(s.released) >= sweepBatch {
		s.sweep()
	}
	s.mu.Unlock()
	if first {
		janitorWake() // so that the entry is cleared in time even if no other comes
	}
}

// clearReleasedBefore clears, in every shard, the entries released before the previous
// call (janitor.go), and reports whether some released ones remain.
func (r *registry) clearReleasedBefore() bool {
	waiting := false
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		s.clearHandles(s.aged)
		s.aged, s.released = s.released, s.aged[:0]
		waiting = waiting || len(s.aged) > 0
		s.mu.Unlock()
	}
	return waiting
}

// releaseWheel ends every live entry of w (w was destroyed) and returns how many there
// were.
func (r *registry) releaseWheel(w *Wheel) int {
	n := 0
	for i := range r.shards {
		n += r.shards[i].releaseWheel(w)
	}
	return n
}

// countWheel is the number of live entries of w.
func (r *registry) countWheel(w *Wheel) int {
	n := 0
	for i := range r.shards {
		n += r.shards[i].countWheel(w)
	}
	return n
}

// lookup returns the timer of each handle, nil where its entry was cleared.
func (r *registry) lookup(handles []uintptr) []*Timer {
	found := make([]*Timer, len(handles))
	for i, h := range handles {
		s := r.shardOf(h)
		s.mu.Lock()
		if e := s.find(h); e != nil {
			found[i] = e.t
		}
		s.mu.Unlock()
	}
	return found
}

// local is the index within its shard of the entry a handle names.
func local(h uintptr) uintptr {
	return (h & indexMask) >> shardBits
}

// releaseWheel ends the shard's live entries of w and returns how many there were.
func (s *shard) releaseWheel(w *Wheel) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep()
	n := 0
	for i := uintptr(0); i < s.made; i++ {
		if t := s.entry(i).t; t != nil && t.w == w {
			s.clear(i)
			n++
		}
	}
	s.live -= n
	return n
}

// countWheel is the number of the shard's live entries of w.
func (s *shard) countWheel(w *Wheel) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep()
	n := 0
	for i := uintptr(0); i < s.made; i++ {
		if e := s.entry(i); e.t != nil && e.t.w == w {
			n++
		}
	}
	return n
}

// find returns the entry a handle names, or nil.
func (s *shard) find(h uintptr) *entry {
	i := local(h)
	if i >= s.made {
		return nil
	}
	if e := s.entry(i); e.t != nil && e.gen == h>>genShift {
		return e
	}
	return nil
}

// entry is entry i of the shard, made.
func (s *shard) entry(i uintptr) *entry {
	return &s.chunks[i/chunkSize][i%chunkSize]
}

// clear empties entry i and makes it free.
func (s *shard) clear(i uintptr) {
	*s.entry(i) = entry{gen: s.freeHead}
	s.freeHead = i + 1
}

// sweep clears the released entries.
func (s *shard) sweep() {
	s.clearHandles(s.aged)
	s.clearHandles(s.released)
	s.aged, s.released = s.aged[:0], s.released[:0]
}

// clearHandles clears the entries of released handles.
func (s *shard) clearHandles(handles []uintptr) {
	for _, h := range handles {
		if s.find(h) != nil { // always true while every release is of a live handle
			s.clear(local(h))
		}
	}
}
