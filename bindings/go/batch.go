package timerwheel

import (
	"sort"
	"unsafe"
)

// StopMany stops each of timers as its Stop would and returns what each Stop would have
// returned, in order. The func timers of w (made by its AfterFunc, Every, ...) are
// stopped in one call into the library; the others (nil: false; a timer of another wheel,
// or made by NewTimer or NewTicker) each by its own Stop. A timer given twice is stopped
// by its first place: false at the later ones.
func (w *Wheel) StopMany(timers []*Timer) []bool {
	stopped := make([]bool, len(timers))
	var mine []int // indexes of the func timers of w, each timer once
	for i, t := range timers {
		switch {
		case t == nil:
		case t.w == w && t.C == nil:
			mine = append(mine, i)
		default:
			stopped[i] = t.Stop()
		}
	}
	w.stopFuncs(timers, firstPlaces(timers, mine), stopped)
	return stopped
}

// firstPlaces keeps, of the indexes into timers, the first of each timer, ordered by the
// timers' addresses: the order in which their locks are taken, so that calls that lock
// overlapping sets of timers never wait for each other in a cycle.
func firstPlaces(timers []*Timer, indexes []int) []int {
	address := func(i int) uintptr { return uintptr(unsafe.Pointer(timers[i])) }
	sort.Slice(indexes, func(a, b int) bool {
		if address(indexes[a]) != address(indexes[b]) {
			return address(indexes[a]) < address(indexes[b])
		}
		return indexes[a] < indexes[b]
	})
	first := indexes[:0]
	for k, i := range indexes {
		if k == 0 || timers[i] != timers[indexes[k-1]] {
			first = append(first, i)
		}
	}
	return first
}

// stopFuncs is Stop of the func timers of w at indexes, each locked (in that order) while
// their C timers are deleted together; it writes each result into stopped.
func (w *Wheel) stopFuncs(timers []*Timer, indexes []int, stopped []bool) {
	for _, i := range indexes {
		timers[i].mu.Lock()
	}
	defer func() {
		for _, i := range indexes {
			timers[i].mu.Unlock()
		}
	}()
	if len(indexes) == 0 || !w.gate.enter() {
		return
	}
	defer w.gate.exit()
	var live []int // the indexes of timers with a live C timer
	var ids []uint64
	for _, i := range indexes {
		if timers[i].handle != 0 {
			live = append(live, i)
			ids = append(ids, timers[i].id)
		}
	}
	for k, err := range cDeleteMany(w.c, ids) {
		i := live[k]
		stopped[i] = timers[i].deleted(err)
	}
}
