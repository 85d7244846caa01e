package timerwheel

import (
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// pendingView is what a test compares of a Pending: its timer and schedule.
type pendingView struct {
	Timer      *Timer
	Due        time.Duration // since start
	Period     time.Duration
	FixedDelay bool
}

func mustExport(t *testing.T, w *Wheel) ([]pendingView, int) {
	t.Helper()
	pending, running, err := w.Export()
	if err != nil {
		t.Fatal(err)
	}
	views := make([]pendingView, len(pending))
	for i, p := range pending {
		views[i] = pendingView{p.Timer, p.Due.Sub(start), p.Period, p.FixedDelay}
	}
	return views, running
}

func TestExportGivesEachPendingTimerWithItsSchedule(t *testing.T) {
	w := newVirtualWheel(t)
	once := mustAfterFunc(t, w, 5*time.Second, func() {})
	charge, _ := w.Every(time.Minute, func() {})
	idle, _ := w.EveryFixedDelay(10*time.Second, func() {})
	mustAfterFunc(t, w, 7*time.Second, func() {}).Stop()
	mustAdvance(t, w, time.Second, 0)

	got, running := mustExport(t, w)
	want := []pendingView{
		{once, 5 * time.Second, 0, false},
		{idle, 10 * time.Second, 10 * time.Second, true},
		{charge, time.Minute, time.Minute, false},
	}
	if running != 0 || !reflect.DeepEqual(got, want) {
		t.Fatalf("Export = %+v, %d; want %+v, 0", got, running, want)
	}
}

func TestExportGivesTheFuncsToCall(t *testing.T) {
	w := newVirtualWheel(t)
	called := 0
	if _, err := w.Every(time.Second, func() { called++ }); err != nil {
		t.Fatal(err)
	}
	pending, _, err := w.Export()
	if err != nil || len(pending) != 1 {
		t.Fatalf("Export = %v, %v; want one timer", pending, err)
	}
	pending[0].Func()
	if called != 1 {
		t.Fatalf("the exported Func called the timer's func %d times, want 1", called)
	}
}

func TestExportCountsAPeriodicTimerWhoseFuncRuns(t *testing.T) {
	w := newVirtualWheel(t)
	later := mustAfterFunc(t, w, 5*time.Second, func() {})
	var got []pendingView
	running := -1
	if _, err := w.Every(time.Second, func() {
		if running < 0 {
			got, running = mustExport(t, w)
		}
	}); err != nil {
		t.Fatal(err)
	}
	mustAdvance(t, w, time.Second, 1)
	want := []pendingView{{later, 5 * time.Second, 0, false}}
	if running != 1 || !reflect.DeepEqual(got, want) {
		t.Fatalf("Export from the func = %+v, %d; want %+v, 1", got, running, want)
	}
}

func TestExportOnAClosedWheel(t *testing.T) {
	w := newVirtualWheel(t)
	w.Close()
	if _, _, err := w.Export(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Export after Close: %v, want ErrClosed", err)
	}
}

// runsSince records the virtual time since start of each call.
func runsSince(w *Wheel, runs *[]time.Duration) func() {
	return func() { *runs = append(*runs, since(w)) }
}

func TestEveryFromAFutureStartRunsOnItsGrid(t *testing.T) {
	w := newVirtualWheel(t)
	var runs []time.Duration
	if _, err := w.EveryFrom(start.Add(90*time.Second), time.Minute, runsSince(w, &runs),
		MissedSkip); err != nil {
		t.Fatal(err)
	}
	mustAdvance(t, w, 5*time.Minute, 4)
	want := []time.Duration{90 * time.Second, 150 * time.Second, 210 * time.Second, 270 * time.Second}
	if !reflect.DeepEqual(runs, want) {
		t.Fatalf("runs at %v, want %v", runs, want)
	}
}

// A charge every minute from start, exported at 2m30s; the process is down until 6m40s
// (the points 3m ... 6m pass); made again on a new wheel, it stays on the grid.
func TestRestartResumesOnTheOriginalGrid(t *testing.T) {
	for _, tc := range []struct {
		missed Missed
		want   []time.Duration
	}{
		{MissedRunOnce, []time.Duration{400 * time.Second, 420 * time.Second, 480 * time.Second, 540 * time.Second}},
		{MissedSkip, []time.Duration{420 * time.Second, 480 * time.Second, 540 * time.Second}},
	} {
		before := newVirtualWheel(t)
		if _, err := before.Every(time.Minute, func() {}); err != nil {
			t.Fatal(err)
		}
		mustAdvance(t, before, 150*time.Second, 2)
		pending, running, err := before.Export()
		if err != nil || running != 0 || len(pending) != 1 {
			t.Fatalf("Export = %v, %d, %v; want one timer", pending, running, err)
		}
		p := pending[0]
		if !p.Due.Equal(start.Add(3*time.Minute)) || p.Period != time.Minute {
			t.Fatalf("exported Due %v, Period %v; want 3m after start, 1m", p.Due.Sub(start), p.Period)
		}

		after := newWheel(t, Config{VirtualStart: start.Add(400 * time.Second)})
		var runs []time.Duration
		if _, err := after.EveryFrom(p.Due, p.Period, runsSince(after, &runs), tc.missed); err != nil {
			t.Fatal(err)
		}
		mustAdvance(t, after, 140*time.Second, len(tc.want))
		if !reflect.DeepEqual(runs, tc.want) {
			t.Fatalf("missed %d: runs at %v, want %v", tc.missed, runs, tc.want)
		}
	}
}

func TestEveryFromRefusesWhatCannotKeepTheSchedule(t *testing.T) {
	w := newVirtualWheel(t)
	f := func() {}
	for _, tc := range []struct {
		period time.Duration
		f      func()
		missed Missed
	}{
		{0, f, MissedSkip},
		{time.Millisecond + time.Microsecond, f, MissedSkip},
		{time.Second, nil, MissedSkip},
		{time.Second, f, Missed(7)},
	} {
		if _, err := w.EveryFrom(start, tc.period, tc.f, tc.missed); !errors.Is(err, ErrInvalid) {
			t.Errorf("EveryFrom(period %v, missed %d): %v, want ErrInvalid", tc.period, tc.missed, err)
		}
	}
	if n := liveEntries(w); n != 0 {
		t.Fatalf("%d registry entries left by refused adds, want 0", n)
	}
}

// Exports taken while other goroutines add and stop timers hold each timer once and none
// stopped before the export began; the last export, after them, holds exactly the timers
// left.
func TestExportUnderConcurrentAddsAndStops(t *testing.T) {
	w := newWheel(t, Config{})
	const goroutines, perGoroutine = 4, 1000
	var stopsDone atomic.Int64
	var stoppedAt sync.Map // *Timer -> the value of stopsDone its Stop made
	var live sync.Map      // *Timer -> struct{}: added and not stopped
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perGoroutine; i++ {
				tm, err := w.AfterFunc(time.Hour, func() {})
				if err != nil {
					t.Error(err)
					return
				}
				if i%2 == 0 && tm.Stop() {
					stoppedAt.Store(tm, stopsDone.Add(1))
					continue
				}
				live.Store(tm, struct{}{})
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	check := func() []Pending {
		before := stopsDone.Load()
		pending, running, err := w.Export()
		if err != nil || running != 0 {
			t.Fatalf("Export: %d running, %v; want 0, nil", running, err)
		}
		seen := make(map[*Timer]bool, len(pending))
		for _, p := range pending {
			if seen[p.Timer] {
				t.Fatalf("timer %p exported twice", p.Timer)
			}
			seen[p.Timer] = true
			if at, ok := stoppedAt.Load(p.Timer); ok && at.(int64) <= before {
				t.Fatalf("timer %p exported after its Stop returned", p.Timer)
			}
		}
		return pending
	}
	for exporting := true; exporting; {
		select {
		case <-done:
			exporting = false
		default:
			check()
		}
	}
	last := check()
	left := 0
	live.Range(func(any, any) bool { left++; return true })
	if len(last) != left {
		t.Fatalf("the last export holds %d timers, %d are pending", len(last), left)
	}
	for _, p := range last {
		if _, ok := live.Load(p.Timer); !ok {
			t.Fatalf("timer %p exported, not pending", p.Timer)
		}
	}
}
