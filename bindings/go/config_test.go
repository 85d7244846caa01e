package timerwheel

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestInvalidConfigs(t *testing.T) {
	for _, cfg := range []Config{
		{Tick: 50 * time.Microsecond},
		{Tick: -time.Millisecond},
		{Tick: 2 * time.Second},
		{MinWorkers: 4, MaxWorkers: 2},
		{MaxWorkers: 5000},
		{WorkerKeepalive: -time.Second},
		{MaxTimers: -1},
	} {
		if w, err := New(cfg); !errors.Is(err, ErrInvalid) {
			t.Errorf("New(%+v) = %v, want ErrInvalid", cfg, err)
			if err == nil {
				w.Close()
			}
		}
	}
}

func TestInvalidConfigNamesTheField(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Tick: 50 * time.Microsecond}, "tick 50µs is out of range: "},
		{Config{MinWorkers: 4, MaxWorkers: 2}, "min_workers 4 is out of range: "},
		{Config{MaxWorkers: 5000}, "max_workers 5000 is out of range: "},
		{Config{MaxTimers: -1}, "MaxTimers -1 is negative"},
	} {
		_, err := New(c.cfg)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want ErrInvalid saying %q", c.cfg, err, c.want)
		}
	}
}

func TestNoWorkersRunsOnTickThread(t *testing.T) {
	w := newWheel(t, Config{MinWorkers: -1, MaxWorkers: -1})
	done := make(chan struct{})
	mustAfterFunc(t, w, time.Millisecond, func() { close(done) })
	receive(t, done, "a callback on the tick thread")
	if s := w.Stats(); s.Workers != 0 || s.WorkersPeak != 0 {
		t.Fatalf("Workers %d WorkersPeak %d, want 0 with MaxWorkers < 0", s.Workers, s.WorkersPeak)
	}
}

func TestMaxTimersGivesErrFull(t *testing.T) {
	w := newWheel(t, Config{MaxTimers: 2})
	a := mustAfterFunc(t, w, time.Hour, func() {})
	mustAfterFunc(t, w, time.Hour, func() {})
	if _, err := w.AfterFunc(time.Hour, func() {}); !errors.Is(err, ErrFull) {
		t.Fatalf("third AfterFunc with MaxTimers 2 = %v, want ErrFull", err)
	}
	if n := liveEntries(w); n != 2 {
		t.Fatalf("%d live entries after a refused add, want 2", n)
	}
	a.Stop()
	mustAfterFunc(t, w, time.Hour, func() {})
}

func TestFineTick(t *testing.T) {
	w := newWheel(t, Config{Tick: 100 * time.Microsecond, WorkerKeepalive: 10 * time.Millisecond})
	done := make(chan struct{})
	mustAfterFunc(t, w, time.Millisecond, func() { close(done) })
	receive(t, done, "a timer on a 100µs wheel")
}

func TestSharedWheel(t *testing.T) {
	done := make(chan struct{})
	if _, err := AfterFunc(time.Millisecond, func() { close(done) }); err != nil {
		t.Fatal(err)
	}
	receive(t, done, "a timer on the shared wheel")
	if err := Default().Close(); err != nil {
		t.Fatalf("Close of the shared wheel = %v, want nil", err)
	}
	runs := make(chan struct{}, 4)
	tm, err := Every(time.Millisecond, func() { runs <- struct{}{} })
	if err != nil {
		t.Fatalf("Every on the shared wheel after its Close: %v", err)
	}
	receive(t, runs, "a periodic run on the shared wheel")
	tm.Stop()
	if Default() != Default() {
		t.Fatal("Default returned two wheels")
	}
	if Version() == "" {
		t.Fatal("empty Version")
	}
}
