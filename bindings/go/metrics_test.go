package timerwheel

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// ranWheel returns a wheel that ran one callback per entry of sleeps, each sleeping that long.
func ranWheel(t *testing.T, cfg Config, sleeps ...time.Duration) *Wheel {
	t.Helper()
	w := newWheel(t, cfg)
	var done sync.WaitGroup
	for _, d := range sleeps {
		d := d // go 1.21: one variable for every iteration
		done.Add(1)
		if _, err := w.AfterFunc(time.Millisecond, func() { time.Sleep(d); done.Done() }); err != nil {
			t.Fatal(err)
		}
	}
	done.Wait()
	eventually(t, "every run counted", func() bool { return w.Stats().Fired == uint64(len(sleeps)) })
	return w
}

func TestSlowCallbacksAreCountedFromTheThreshold(t *testing.T) {
	// One worker, and a last callback of no length: when it has run, the worker has
	// counted every callback before it (a callback's length is counted after it returns).
	one := func(slow time.Duration) Config { return Config{SlowCallback: slow, MaxWorkers: 1} }
	watched := ranWheel(t, one(30*time.Millisecond), 0, 40*time.Millisecond, time.Millisecond, 60*time.Millisecond, 0)
	if got := watched.Stats().SlowCallbacks; got != 2 {
		t.Fatalf("SlowCallbacks = %d, want 2", got)
	}
	unwatched := ranWheel(t, one(0), 0, 40*time.Millisecond, 0)
	if got := unwatched.Stats().SlowCallbacks; got != 0 {
		t.Fatalf("SlowCallbacks = %d with no threshold, want 0", got)
	}
	if _, err := New(Config{SlowCallback: -time.Second}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a negative SlowCallback gave %v, want ErrInvalid", err)
	}
}

func TestMetricsTextGivesTheCounters(t *testing.T) {
	w := ranWheel(t, Config{}, 0, 0, 0)
	text, err := w.MetricsText()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"timerwheel_timers_fired_total 3",
		"timerwheel_timers_added_total 3",
		`timerwheel_lateness_seconds_bucket{le="+Inf"} 3`,
		"# TYPE timerwheel_lateness_seconds histogram",
	} {
		if !strings.Contains(text, "\n"+line+"\n") {
			t.Errorf("no line %q in\n%s", line, text)
		}
	}
	w.Close()
	if _, err := w.MetricsText(); !errors.Is(err, ErrClosed) {
		t.Fatalf("MetricsText after Close gave %v, want ErrClosed", err)
	}
}

func TestStatsRecentCountsSinceTheStartWhileTheWheelIsYounger(t *testing.T) {
	w := ranWheel(t, Config{}, 0, 0)
	minute, all := w.StatsRecent(time.Minute), w.Stats()
	if minute.Fired != 2 || minute.Added != 2 {
		t.Fatalf("last minute %+v, want 2 added and fired", minute)
	}
	if minute.Span > all.Span || all.Span <= 0 {
		t.Fatalf("last minute spans %v, since start %v", minute.Span, all.Span)
	}
	if got := w.StatsRecent(time.Hour); got.Fired != 2 {
		t.Fatalf("a window beyond a minute: %+v", got)
	}
	w.Close()
	if got := w.StatsRecent(time.Second); got != (Stats{}) {
		t.Fatalf("after Close: %+v, want the zero Stats", got)
	}
}
