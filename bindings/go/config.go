package timerwheel

// #include <stdlib.h>
// #include "timerwheel.h"
import "C"

import (
	"fmt"
	"math"
	"time"
	"unsafe"
)

// Config sets up a Wheel. The zero Config means every default; a field left zero takes its
// default, and a negative MinWorkers or MaxWorkers asks for zero.
type Config struct {
	// Tick is the granularity of the wheel: deadlines round up to it. Default 1ms; the
	// library's range is in the error New returns for a Tick out of it.
	Tick time.Duration
	// MinWorkers is how many worker threads are kept when idle. Default 1; negative: 0.
	MinWorkers int
	// MaxWorkers bounds the worker threads. Default: the number of CPUs. Negative: no
	// workers at all, callbacks run on the tick thread itself (fine for short callbacks;
	// a slow one delays every other).
	MaxWorkers int
	// WorkerKeepalive is how long an idle worker lives before it retires (down to
	// MinWorkers). Default 1s.
	WorkerKeepalive time.Duration
	// MaxTimers bounds the pending timers; an add beyond it fails with ErrFull. Default:
	// no limit.
	MaxTimers int
	// VirtualStart, if set, puts the wheel on a virtual clock that starts at this time:
	// time moves only by Advance and AdvanceToNext, which run the due callbacks on the
	// calling goroutine, and the wheel has no threads. For tests of timer logic.
	VirtualStart time.Time
	// SlowCallback, if set, counts in Stats.SlowCallbacks every callback that runs at
	// least this long (rounded up to the microsecond). Unset, nothing is measured; set,
	// each callback costs one more reading of the clock.
	SlowCallback time.Duration
	// OnPanic, if set, is called with the value of every panic recovered from a callback,
	// on the callback's thread, after the panic has been counted in Stats.CallbackPanics.
	// A panic in OnPanic itself is dropped.
	OnPanic func(v any)

	// Durable timers (docs/contract.md, "Durable timers"; Wheel.HandleDurable).
	// StorePath is the store's file, opened by OpenDurable; empty: no store.
	StorePath string
	// Durability is when a change is committed: DurableAsync (the default) or DurableSync.
	Durability Durability
	// StoreBatch bounds the events per commit. Default 1000.
	StoreBatch int
	// StoreDelay is, in DurableAsync mode, the longest an event waits for its commit.
	// Default 10ms.
	StoreDelay time.Duration
	// MissedPoints is what a periodic durable timer does with points missed while down.
	MissedPoints MissedPoints
}

// toC fills the library's defaults and overrides the fields that are set. The error, which
// wraps ErrInvalid, names a field out of range: with the library's words and range for
// what the library checks.
func (c Config) toC() (C.tw_config, error) {
	cfg := cDefaultConfig()
	switch {
	case c.Tick < 0:
		return cfg, negative("Tick", c.Tick)
	case c.WorkerKeepalive < 0:
		return cfg, negative("WorkerKeepalive", c.WorkerKeepalive)
	case c.MaxTimers < 0:
		return cfg, negative("MaxTimers", c.MaxTimers)
	case c.SlowCallback < 0:
		return cfg, negative("SlowCallback", c.SlowCallback)
	case c.StoreBatch < 0:
		return cfg, negative("StoreBatch", c.StoreBatch)
	case c.StoreDelay < 0:
		return cfg, negative("StoreDelay", c.StoreDelay)
	}
	if c.Tick > 0 {
		cfg.tick_us = C.uint64_t(ceilDiv(c.Tick, time.Microsecond))
	}
	if c.MinWorkers != 0 {
		cfg.min_workers = C.uint32_t(workerCount(c.MinWorkers))
	}
	if c.MaxWorkers != 0 {
		cfg.max_workers = C.uint32_t(workerCount(c.MaxWorkers))
	}
	if c.WorkerKeepalive > 0 {
		cfg.worker_keepalive_ms = C.uint64_t(ceilDiv(c.WorkerKeepalive, time.Millisecond))
	}
	cfg.max_timers = C.uint64_t(c.MaxTimers)
	cfg.slow_callback_us = C.uint64_t(ceilDiv(c.SlowCallback, time.Microsecond))
	if !c.VirtualStart.IsZero() {
		cfg.clock = C.TW_CLOCK_VIRTUAL
		cfg.virtual_start_unix_ms = C.int64_t(c.VirtualStart.UnixMilli())
	}
	c.durableToC(&cfg)
	if why := cConfigCheck(cfg); why != "" {
		return cfg, fmt.Errorf("%w: %s", ErrInvalid, why)
	}
	return cfg, nil
}

// negative is the error of a Config field that must not be negative.
func negative(field string, value any) error {
	return fmt.Errorf("%w: %s %v is negative", ErrInvalid, field, value)
}

// workerCount maps a non-zero Config worker count to the C value: negative means 0, and
// counts beyond uint32 saturate (the library then refuses them as invalid).
func workerCount(n int) uint32 {
	switch {
	case n < 0:
		return 0
	case uint64(n) > math.MaxUint32:
		return math.MaxUint32
	default:
		return uint32(n)
	}
}

// durableToC sets the store's fields; the path is C memory that freeC frees.
func (c Config) durableToC(cfg *C.tw_config) {
	if c.StorePath != "" {
		cfg.store_path = C.CString(c.StorePath)
		cfg.durability = C.TW_DURABLE_ASYNC
	}
	if c.Durability != 0 {
		cfg.durability = C.uint32_t(c.Durability)
	}
	if c.StoreBatch != 0 {
		cfg.store_batch = C.uint32_t(workerCount(c.StoreBatch))
	}
	if c.StoreDelay != 0 {
		cfg.store_delay_us = C.uint64_t(ceilDiv(c.StoreDelay, time.Microsecond))
	}
	cfg.missed_points = C.uint32_t(c.MissedPoints)
}

// freeC frees what toC allocated.
func freeC(cfg C.tw_config) {
	C.free(unsafe.Pointer(cfg.store_path))
}
