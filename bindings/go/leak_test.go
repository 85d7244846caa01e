package timerwheel

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestNoLeaks ends timers every way there is and checks that each released its registry
// entry and that no goroutine is left behind.
func TestNoLeaks(t *testing.T) {
	startDelivery() // the one goroutine of the process that delivers fires stays
	before := runtime.NumGoroutine()
	w, err := New(Config{MaxWorkers: 4})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(100)
	for i := 0; i < 100; i++ {
		mustAfterFunc(t, w, time.Duration(i%5)*time.Millisecond, wg.Done) // fired
	}
	for i := 0; i < 100; i++ {
		mustAfterFunc(t, w, time.Hour, func() {}).Stop() // stopped
	}
	periodic := make([]*Timer, 20)
	for i := range periodic {
		if periodic[i], err = w.Every(time.Millisecond, func() {}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 100; i++ {
		mustAfterFunc(t, w, time.Hour, func() {}) // discarded by Close
	}
	wg.Wait()
	time.Sleep(20 * time.Millisecond)
	for _, tm := range periodic[:10] {
		tm.Stop() // stopped after running a while; the other 10 are discarded by Close
	}
	if n := liveEntries(w); n != 110 {
		t.Fatalf("%d live entries with 110 timers pending", n)
	}
	w.Close()
	if n := liveEntries(w); n != 0 {
		t.Fatalf("%d registry entries live after Close", n)
	}
	eventually(t, "the goroutine count to return to where it was", func() bool {
		return runtime.NumGoroutine() <= before
	})
}

func TestUnreachableWheelIsClosed(t *testing.T) {
	before := openWheels.Load()
	func() {
		w, err := New(Config{})
		if err != nil {
			t.Fatal(err)
		}
		mustAfterFunc(t, w, 0, func() {}) // fires, so nothing keeps w reachable
	}()
	eventually(t, "the collector to close the dropped wheel", func() bool {
		runtime.GC()
		return openWheels.Load() == before
	})
}
