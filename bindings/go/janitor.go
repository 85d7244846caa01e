package timerwheel

import (
	"sync"
	"time"
)

// The janitor bounds how long a stopped timer keeps its wheel reachable. A released
// registry entry is cleared in a batch with others (registry.release), and a deferred
// Stop's C timer is deleted in a batch (stops.go); until then the entry holds the Timer,
// and the Timer its Wheel, so a wheel dropped without Close, its timers stopped, was never
// collected (and its threads never ended). The janitor is a goroutine that runs while
// something waits: every janitorPeriod it makes the deletes queued on the wheels that
// asked, then clears the registry entries released before its previous round.
// It holds a wheel only until that wheel's queue is flushed, and ends when nothing waits.

// janitorPeriod is how long a round waits.
const janitorPeriod = 100 * time.Millisecond

var janitor struct {
	mu      sync.Mutex
	running bool
	wheels  map[*Wheel]struct{} // wheels whose stop queue waits for a flush
}

// janitorWatch asks the janitor to flush w's stop queue, which has just received its first
// Stop since its last flush.
func janitorWatch(w *Wheel) {
	janitor.mu.Lock()
	defer janitor.mu.Unlock()
	if janitor.wheels == nil {
		janitor.wheels = map[*Wheel]struct{}{}
	}
	janitor.wheels[w] = struct{}{}
	startJanitorLocked()
}

// janitorWake makes sure the janitor runs: a registry shard has just released its first
// entry since its last round.
func janitorWake() {
	janitor.mu.Lock()
	defer janitor.mu.Unlock()
	startJanitorLocked()
}

// startJanitorLocked starts the janitor unless it runs. The caller holds janitor.mu.
func startJanitorLocked() {
	if !janitor.running {
		janitor.running = true
		go janitorRun()
	}
}

// janitorRun is the janitor: rounds until a round finds nothing waiting.
func janitorRun() {
	for {
		time.Sleep(janitorPeriod)
		janitor.mu.Lock()
		wheels := janitor.wheels
		janitor.wheels = nil
		janitor.mu.Unlock()
		for w := range wheels {
			if w.gate.enter() {
				w.flushStops()
				w.gate.exit()
			}
		}
		waiting := timers.clearReleasedBefore()
		janitor.mu.Lock()
		if !waiting && len(janitor.wheels) == 0 {
			janitor.running = false
			janitor.mu.Unlock()
			return
		}
		janitor.mu.Unlock()
	}
}
