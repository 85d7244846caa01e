package timerwheel

// #include "timerwheel.h"
import "C"

import "time"

// Stats is a snapshot of a wheel's counters (the fields of the C library's tw_stats). At
// any quiet moment Added == FiredOneShot + Cancelled + Pending + Discarded. Wheel.Stats
// counts since the wheel started; Wheel.StatsRecent counts about a recent window.
type Stats struct {
	Pending        uint64        // timers that will run (again) unless stopped
	Added          uint64        // timers ever added (a Reset of a stopped or fired timer adds anew)
	Fired          uint64        // callback runs, periodic runs included
	FiredOneShot   uint64        // one-shot timers that ran
	Cancelled      uint64        // timers stopped by Stop
	Discarded      uint64        // pending timers dropped by Close
	Workers        uint64        // worker threads now
	WorkersPeak    uint64        // most worker threads at once
	WorkersSpawned uint64        // worker threads ever started
	WorkersRetired uint64        // worker threads retired after WorkerKeepalive idle
	QueueDepth     uint64        // due callbacks waiting for a worker
	LateP50        time.Duration // median lateness of the library's expiries (start minus deadline)
	LateP99        time.Duration // 99th percentile lateness
	LateMax        time.Duration // largest lateness
	CallbackPanics uint64        // callbacks that panicked (recovered)
	SlowCallbacks  uint64        // callbacks that ran for at least Config.SlowCallback
	Span           time.Duration // how long the counters cover (since start, or the last minute)
}

// statsFromC converts the C counters.
func statsFromC(s *C.tw_stats) Stats {
	return Stats{
		Pending:        uint64(s.pending),
		Added:          uint64(s.added),
		Fired:          uint64(s.fired),
		FiredOneShot:   uint64(s.fired_one_shot),
		Cancelled:      uint64(s.cancelled),
		Discarded:      uint64(s.discarded),
		Workers:        uint64(s.workers),
		WorkersPeak:    uint64(s.workers_peak),
		WorkersSpawned: uint64(s.workers_spawned),
		WorkersRetired: uint64(s.workers_retired),
		QueueDepth:     uint64(s.queue_depth),
		LateP50:        time.Duration(s.late_p50_us) * time.Microsecond,
		LateP99:        time.Duration(s.late_p99_us) * time.Microsecond,
		LateMax:        time.Duration(s.late_max_us) * time.Microsecond,
		CallbackPanics: uint64(s.callback_panics),
		SlowCallbacks:  uint64(s.slow_callbacks),
		Span:           time.Duration(s.span_ms) * time.Millisecond,
	}
}
