package timerwheel

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// addFromGoroutines adds n one-shot timers of f due within 3 ms to w from 8 goroutines and
// returns them.
func addFromGoroutines(t *testing.T, w *Wheel, n int, f func(i int)) []*Timer {
	const goroutines = 8
	timers := make([]*Timer, n)
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := g; i < n; i += goroutines {
				i := i // go 1.21: one i for the whole loop
				d := time.Duration(i%4) * time.Millisecond
				tm, err := w.AfterFunc(d, func() { f(i) })
				if err != nil {
					t.Error(err)
					return
				}
				timers[i] = tm
			}
		}(g)
	}
	wg.Wait()
	return timers
}

// Close while thousands of fires are queued for delivery or running: when it returns,
// every func that started has returned, none starts afterwards, and the counters balance.
func TestCloseRacingDeliveredFiresWaitsForEveryStartedFunc(t *testing.T) {
	w, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	var started, finished atomic.Int64
	addFromGoroutines(t, w, 20000, func(int) {
		started.Add(1)
		time.Sleep(200 * time.Microsecond)
		finished.Add(1)
	})
	time.Sleep(2 * time.Millisecond)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	atClose := started.Load()
	if f := finished.Load(); f != atClose {
		t.Fatalf("Close returned with %d funcs started and %d returned", atClose, f)
	}
	time.Sleep(50 * time.Millisecond)
	if s := started.Load(); s != atClose {
		t.Fatalf("%d funcs started after Close returned", s-atClose)
	}
	s := w.Stats()
	checkInvariant(t, s)
	if s.FiredOneShot != uint64(atClose) {
		t.Fatalf("Stats after Close: FiredOneShot %d, %d funcs ran", s.FiredOneShot, atClose)
	}
	if n := liveEntries(w); n != 0 {
		t.Fatalf("%d registry entries live after Close", n)
	}
}

// Close from a delivered func while thousands of fires are due at once, the rest of its
// batch among them: once Close has returned, no func of the wheel starts, and the fires
// whose funcs had not started count as discarded.
func TestCloseFromADeliveredFuncLetsNoFuncStartAfterIt(t *testing.T) {
	w, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 5000
	var started, atClose atomic.Int64
	closed := make(chan error, 1)
	due := time.Now().Add(200 * time.Millisecond) // the same tick for all, even under -race
	for i := 0; i < n; i++ {
		mustAfterFunc(t, w, time.Until(due), func() {
			if started.Add(1) == 100 {
				err := w.Close()
				atClose.Store(started.Load())
				closed <- err
			}
		})
	}
	if err := receive(t, closed, "Close from a delivered func"); err != nil {
		t.Fatalf("Close from a delivered func = %v, want nil", err)
	}
	time.Sleep(100 * time.Millisecond)
	if late := started.Load() - atClose.Load(); late != 0 {
		t.Fatalf("%d funcs started after Close returned", late)
	}
	eventually(t, "every timer counted", func() bool {
		s := w.Stats()
		return s.FiredOneShot+s.Discarded == n
	})
	s := w.Stats()
	checkInvariant(t, s)
	if s.FiredOneShot != uint64(started.Load()) {
		t.Fatalf("Stats after Close: FiredOneShot %d, %d funcs ran", s.FiredOneShot, started.Load())
	}
}

// Goroutines stop timers while their fires are queued for delivery: a timer's func runs
// exactly when its Stop returned false, and then once.
func TestStopRacingDeliveredFiresIsExact(t *testing.T) {
	w := newWheel(t, Config{})
	const n = 16000
	var ran [n]atomic.Int32
	timers := addFromGoroutines(t, w, n, func(i int) { ran[i].Add(1) })
	var stopped [n]bool
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := g; i < n; i += 8 {
				if rand.Intn(8) == 0 {
					time.Sleep(50 * time.Microsecond) // let some come due first
				}
				stopped[i] = timers[i].Stop()
			}
		}(g)
	}
	wg.Wait()
	eventually(t, "every timer to be stopped or fired", func() bool {
		return w.Stats().Pending == 0
	})
	time.Sleep(20 * time.Millisecond) // lets the delivered runs finish
	for i := range timers {
		want := int32(1)
		if stopped[i] {
			want = 0
		}
		if got := ran[i].Load(); got != want {
			t.Fatalf("timer %d: Stop = %v, its func ran %d times", i, stopped[i], got)
		}
	}
	checkInvariant(t, w.Stats())
}

// StopWait from a delivered one-shot's own func returns ErrBusy at once; from the func of
// another timer, run while the first is under way, it waits for the first to return.
func TestStopWaitFromDeliveredFuncs(t *testing.T) {
	w := newWheel(t, Config{})
	type result struct {
		stopped bool
		err     error
	}
	own := make(chan result, 1)
	timerA := make(chan *Timer, 1) // a's func may start before AfterFunc returns
	aRunning, aRelease := make(chan struct{}), make(chan struct{})
	var aReturned atomic.Bool
	a, err := w.AfterFunc(0, func() {
		a := <-timerA
		timerA <- a
		stopped, err := a.StopWait()
		own <- result{stopped, err}
		close(aRunning)
		<-aRelease
		aReturned.Store(true)
	})
	if err != nil {
		t.Fatal(err)
	}
	timerA <- a
	if r := receive(t, own, "StopWait from its own func"); r.stopped || !errors.Is(r.err, ErrBusy) {
		t.Fatalf("StopWait from its own delivered func = %v, %v; want false, ErrBusy",
			r.stopped, r.err)
	}
	receive(t, aRunning, "a's func to go on")
	other := make(chan bool, 1)
	mustAfterFunc(t, w, 0, func() {
		_, err := a.StopWait()
		other <- err == nil && aReturned.Load()
	})
	time.Sleep(20 * time.Millisecond)
	select {
	case <-other:
		t.Fatal("StopWait from another func returned while a's func ran")
	default:
	}
	close(aRelease)
	if !receive(t, other, "StopWait from another func") {
		t.Fatal("StopWait from another func: an error, or it returned before a's func did")
	}
}

// freshProcess runs the test named name again in a child process of its own (where no
// other test has started deliverers yet) and returns what the child printed; inChild
// reports whether the caller is that child.
func freshProcess(t *testing.T, name string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.v")
	cmd.Env = append(os.Environ(), freshChildEnv+"="+name)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child %s: %v\n%s", name, err, out)
	}
	return string(out)
}

const freshChildEnv = "TIMERWHEEL_FRESH_CHILD"

func inChild(name string) bool { return os.Getenv(freshChildEnv) == name }

// childValue is the integer the child printed after "key=".
func childValue(t *testing.T, out, key string) int {
	t.Helper()
	i := strings.Index(out, key+"=")
	if i < 0 {
		t.Fatalf("the child printed no %s:\n%s", key, out)
	}
	var v int
	if _, err := fmt.Sscanf(out[i+len(key)+1:], "%d", &v); err != nil {
		t.Fatalf("the child's %s: %v\n%s", key, err, out)
	}
	return v
}

// Funcs that block, one due every 2 ms, make a deliverer each (the others are busy in a
// func); once they have returned, those deliverers wait for fires without holding a
// thread each (they park in Go, not inside a call into C).
func TestParkedDeliverersHoldNoThread(t *testing.T) {
	const name = "TestParkedDeliverersHoldNoThread"
	if !inChild(name) {
		out := freshProcess(t, name)
		made, threads := childValue(t, out, "deliverers"), childValue(t, out, "threads")
		if made < 8 {
			t.Fatalf("only %d deliverers made: the test did not park many", made)
		}
		if threads > 8 {
			t.Fatalf("%d threads made for %d parked deliverers", threads, made)
		}
		return
	}
	w := newWheel(t, Config{})
	warm := make(chan struct{})
	mustAfterFunc(t, w, 0, func() { close(warm) })
	receive(t, warm, "the first fire")
	time.Sleep(20 * time.Millisecond)
	threads := pprof.Lookup("threadcreate")
	before, deliverersBefore := threads.Count(), deliverers.Load()
	const n = 24
	var wg sync.WaitGroup
	wg.Add(n)
	for i := 0; i < n; i++ {
		mustAfterFunc(t, w, time.Duration(2*i)*time.Millisecond, func() {
			time.Sleep(100 * time.Millisecond)
			wg.Done()
		})
	}
	wg.Wait()
	time.Sleep(50 * time.Millisecond) // every deliverer is parked again
	fmt.Printf("deliverers=%d threads=%d\n", deliverers.Load()-deliverersBefore,
		threads.Count()-before)
}
