package timerwheel

import (
	"errors"
	"math"
	"runtime"
	"testing"
	"time"
)

func TestMillisRoundsUp(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want uint64
	}{
		{-time.Hour, 0}, {0, 0}, {time.Nanosecond, 1}, {time.Millisecond, 1},
		{time.Millisecond + time.Nanosecond, 2}, {1500 * time.Microsecond, 2},
		{time.Second, 1000}, {math.MaxInt64, math.MaxInt64/1000000 + 1},
	} {
		if got := millis(c.d); got != c.want {
			t.Errorf("millis(%v) = %d, want %d", c.d, got, c.want)
		}
	}
}

func TestEveryStatusHasItsError(t *testing.T) {
	want := []error{nil, ErrInvalid, ErrNotFound, ErrFull, ErrClosed, ErrBusy, ErrInternal, ErrForked,
		errTooSmall, ErrGroupClosed}
	for code, err := range want {
		if got := errFromCode(code); got != err {
			t.Errorf("errFromCode(%d) = %v, want %v", code, got, err)
		}
	}
	if !errors.Is(errFromCode(99), ErrInternal) {
		t.Error("an unknown status is not ErrInternal")
	}
	if !errors.Is(errNilFunc, ErrInvalid) {
		t.Error("errNilFunc is not ErrInvalid")
	}
}

func TestRegistryStaleHandleFindsNothing(t *testing.T) {
	var r registry
	w := &Wheel{}
	periodic := &Timer{w: w, period: time.Millisecond}
	h := r.add(periodic)
	if r.fired(h) != periodic || r.fired(h) != periodic {
		t.Fatal("a live periodic entry did not find its timer")
	}
	r.release(h)
	if n := r.countWheel(w); n != 0 {
		t.Fatalf("%d live entries after release, want 0", n)
	}
	if r.fired(h) != nil {
		t.Fatal("a released and cleared handle found its timer")
	}
	oneShot := &Timer{w: w}
	h2 := r.add(oneShot)
	for h2&shardMask != h&shardMask { // until an add lands in the shard of h
		r.release(h2)
		r.shardOf(h2).sweep()
		h2 = r.add(oneShot)
	}
	if h2&indexMask != h&indexMask {
		t.Fatal("a cleared entry was not reused")
	}
	if r.fired(h) != nil {
		t.Fatal("a stale handle found the entry's new timer")
	}
	if r.fired(h2) != oneShot || r.fired(h2) != nil {
		t.Fatal("a one-shot entry must fire once")
	}
	if n := r.countWheel(w); n != 0 || r.liveCount() != 0 {
		t.Fatalf("%d live entries (counter %d), want 0", n, r.liveCount())
	}
}

func TestRegistryTimerWithTwoEntries(t *testing.T) {
	// A one-shot Timer rescheduled by Reset while its old C timer is about to fire has two
	// entries; both fire.
	var r registry
	w := &Wheel{}
	tm := &Timer{w: w}
	old, renewed := r.add(tm), r.add(tm)
	if r.fired(old) != tm || r.fired(renewed) != tm {
		t.Fatal("both entries of a rescheduled timer must fire")
	}
	if n := r.countWheel(w); n != 0 {
		t.Fatalf("%d live entries, want 0", n)
	}
}

func TestRegistryFiringAllocatesNothingAndReusesEveryEntry(t *testing.T) {
	// A burst of fires that allocated (a free list growing) would start the collector's
	// mark phase in the middle of the burst, where its workers hold up the fires behind.
	const n = 20000
	var r registry
	w := &Wheel{}
	handles := make([]uintptr, n)
	for i := range handles {
		handles[i] = r.add(&Timer{w: w})
	}
	sizes := make([]int, shards)
	for i := range r.shards {
		sizes[i] = int(r.shards[i].made)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, h := range handles {
		if r.fired(h) == nil {
			t.Fatal("a live one-shot entry did not fire")
		}
	}
	runtime.ReadMemStats(&after)
	if allocs := after.Mallocs - before.Mallocs; allocs > 10 {
		t.Fatalf("%d fires made %d allocations, want none", n, allocs)
	}
	taken := map[uintptr]bool{}
	added := make([]int, shards)
	for range handles {
		h := r.add(&Timer{w: w})
		if taken[h&indexMask] {
			t.Fatalf("entry %#x given to two live timers", h&indexMask)
		}
		taken[h&indexMask] = true
		added[h&shardMask]++
	}
	for i := range r.shards {
		if got, want := int(r.shards[i].made), max(sizes[i], added[i]); got != want {
			t.Fatalf("shard %d has %d entries after %d adds into %d cleared, want %d",
				i, got, added[i], sizes[i], want)
		}
	}
}

// liveCount is the number of live entries, of every wheel.
func (r *registry) liveCount() int {
	n := 0
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		n += s.live
		s.mu.Unlock()
	}
	return n
}

func TestStopAndResetTakeNoLockOfAnotherShard(t *testing.T) {
	w := newWheel(t, Config{})
	tm := mustAfterFunc(t, w, time.Hour, func() {})
	tm.mu.Lock()
	own := tm.handle & shardMask
	tm.mu.Unlock()
	for i := range timers.shards { // a firing or an add elsewhere holds every other shard
		if uintptr(i) != own {
			timers.shards[i].mu.Lock()
			defer timers.shards[i].mu.Unlock()
		}
	}
	done := make(chan bool)
	go func() { done <- tm.Reset(2*time.Hour) && tm.Stop() }()
	select {
	case ok := <-done:
		if !ok {
			t.Fatal("Reset and Stop of a pending timer = false, want true")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Reset or Stop waited for the lock of a shard its timer is not in")
	}
}
