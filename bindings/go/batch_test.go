package timerwheel

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestStopManyGivesEachTimerWhatItsStopWould(t *testing.T) {
	w, other := newWheel(t, Config{}), newWheel(t, Config{})
	never := func() { t.Error("a stopped timer ran") }
	a, b := mustAfterFunc(t, w, time.Hour, never), mustAfterFunc(t, w, time.Hour, never)
	stoppedBefore := mustAfterFunc(t, w, time.Hour, never)
	stoppedBefore.Stop()
	ran := make(chan struct{})
	fired := mustAfterFunc(t, w, 0, func() { close(ran) })
	receive(t, ran, "the one-shot to fire")
	foreign := mustAfterFunc(t, other, time.Hour, never)
	ch, err := w.NewTimer(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	got := w.StopMany([]*Timer{a, nil, b, a, stoppedBefore, fired, foreign, ch, b})
	want := []bool{true, false, true, false, false, false, true, true, false}
	if !slices.Equal(got, want) {
		t.Fatalf("StopMany = %v, want %v", got, want)
	}
	for _, tm := range []*Timer{a, b, foreign, ch} {
		if tm.Stop() {
			t.Fatal("a timer StopMany stopped was still active")
		}
	}
	eventually(t, "nothing pending", func() bool { return w.Stats().Pending == 0 })
	if s := w.Stats(); s.Cancelled != 4 { // a, b, stoppedBefore, ch
		t.Fatalf("%d cancelled, want 4", s.Cancelled)
	}
	if len(w.StopMany(nil)) != 0 {
		t.Fatal("StopMany(nil) is not empty")
	}
}

// Timers due at once, stopped in batches while they fire: each either runs its func or
// is reported stopped, never both and never neither.
func TestStopManyRacingTheFiringStopsExactlyTheTimersThatDoNotRun(t *testing.T) {
	w := newWheel(t, Config{})
	const rounds, batch = 50, 64
	for r := 0; r < rounds; r++ {
		var ran [batch]atomic.Int32
		timers := make([]*Timer, batch)
		for i := range timers {
			i := i
			timers[i] = mustAfterFunc(t, w, time.Duration(i%3)*time.Millisecond, func() {
				ran[i].Add(1)
			})
		}
		time.Sleep(time.Duration(r%3) * time.Millisecond)
		stopped := w.StopMany(timers)
		eventually(t, "the round's timers to end", func() bool { return w.Stats().Pending == 0 })
		for i := range timers {
			runs := ran[i].Load()
			eventually(t, "a counted run to reach its func", func() bool {
				runs = ran[i].Load()
				return runs == 1 || stopped[i]
			})
			if stopped[i] == (runs == 1) || runs > 1 {
				t.Fatalf("round %d timer %d: stopped %v, ran %d times", r, i, stopped[i], runs)
			}
		}
	}
	checkInvariant(t, w.Stats())
}

// Two goroutines stop overlapping sets of timers in opposite orders, with a Stop of each
// timer beside them: nothing deadlocks, and each timer is stopped by exactly one call.
func TestStopManyOverlappingBatchesStopEachTimerOnce(t *testing.T) {
	w := newWheel(t, Config{})
	timers := make([]*Timer, 200)
	for i := range timers {
		timers[i] = mustAfterFunc(t, w, time.Hour, func() {})
	}
	reversed := slices.Clone(timers)
	slices.Reverse(reversed)
	var trues atomic.Int64
	count := func(results []bool) {
		for _, ok := range results {
			if ok {
				trues.Add(1)
			}
		}
	}
	var wg sync.WaitGroup
	for _, set := range [][]*Timer{timers, reversed, timers[50:150]} {
		set := set
		wg.Add(2)
		go func() { defer wg.Done(); count(w.StopMany(set)) }()
		go func() {
			defer wg.Done()
			for _, tm := range set {
				if tm.Stop() {
					trues.Add(1)
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	receive(t, done, "the stops to return")
	if n := trues.Load(); n != int64(len(timers)) {
		t.Fatalf("%d stops returned true, want %d", n, len(timers))
	}
}

func TestStopManyOnAClosedWheelStopsNothing(t *testing.T) {
	w := newWheel(t, Config{})
	tm := mustAfterFunc(t, w, time.Hour, func() {})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := w.StopMany([]*Timer{tm}); got[0] {
		t.Fatal("StopMany on a closed wheel = true")
	}
}

// A periodic timer stopped by a batch from its own func: true, and no further call.
func TestStopManyFromItsOwnPeriodicFunc(t *testing.T) {
	w := newWheel(t, Config{})
	var calls atomic.Int32
	result := make(chan []bool, 1)
	var tm *Timer
	var mu sync.Mutex
	mu.Lock()
	tm, err := w.Every(time.Millisecond, func() {
		if calls.Add(1) == 1 {
			mu.Lock()
			result <- w.StopMany([]*Timer{tm})
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Unlock()
	if got := receive(t, result, "the func's StopMany"); !got[0] {
		t.Fatal("StopMany of a periodic timer from its own func = false")
	}
	time.Sleep(20 * time.Millisecond)
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d calls after StopMany from the first, want 1", n)
	}
}
