// Package timerwheel is a Go binding of timerwheel, a hierarchical timing wheel with a tick
// thread and an adaptive pool of worker threads, for programs that keep very many timers
// alive at once: an idle timeout per connection or session, periodic charging and heartbeat
// ticks, retries with back-off.
//
// It is used like the standard library's time.AfterFunc:
//
//	t, err := timerwheel.AfterFunc(30*time.Second, func() { closeIdle(conn) })
//	...
//	t.Reset(30 * time.Second) // activity: push the timeout back
//	t.Stop()                  // done
//
// The package-level functions use one shared wheel per process (Default), which is the
// right choice for most programs; New starts a wheel of its own, with its own threads, that
// Close shuts down.
//
// # Semantics
//
// A one-shot's duration rounds up to the millisecond (a period keeps its nanoseconds): a
// timer never fires early, and fires normally within an eighth of a tick (50 us to 1 ms)
// after its deadline. Stop and Reset return what time.Timer's do. Runs of one periodic
// timer never overlap. A panic in a func is recovered and counted in Stats.CallbackPanics;
// the wheel goes on. Close waits for running funcs and discards pending timers.
//
// AfterFuncContext and EveryContext tie a timer to a context.Context: it is stopped when the
// context is done. NewTimer and NewTicker deliver on a channel C, like time.NewTimer and
// time.NewTicker with Go 1.23's semantics (no stale value after Stop or Reset). StopWait
// stops a timer and waits for a run of its func under way, as the C library's
// tw_delete_sync does.
//
// # How funcs run
//
// The package is cgo over the C library libtimerwheel, linked statically. Go funcs never
// cross into C: each C timer carries as its user data a handle, the index of an entry of a
// Go table that points to its Timer plus a generation, and a stale handle (its timer
// stopped, the entry reused) finds nothing. When a periodic timer fires (or any timer of a
// wheel on a virtual clock or with Config.SlowCallback), the library's worker thread calls
// an exported Go function that runs the func right there, on that thread, and returns to
// the library when it has returned. So the library's guarantees hold for those funcs as
// they are: a periodic func does not overlap itself, a fixed-delay period counts from the
// func's return, Close waits for the funcs that run, and a slow func makes the pool grow
// rather than delay other timers. A one-shot func on the real clock runs instead on one of
// the package's deliverer goroutines, which take the fires queued by the library in
// batches (see the README, "How callbacks run"): a func that blocks holds up at most the
// rest of its batch. A func may block. It must return or panic: runtime.Goexit (which
// testing's FailNow calls) cannot end a call that came from C.
//
// A func may call any method of its wheel and of its Timer, Stop and Reset of its own
// Timer included.
//
// An entry is released when its one-shot timer fires, when Stop stops the timer, or when
// Close discards it: no handle outlives its timer. The package starts no goroutine of its
// own but the deliverers (up to 256 in a process, parked while nothing is due), a janitor
// while stopped timers wait to be cleared (it ends when none does), one to finish a Close
// called from one of the wheel's funcs, and the one context.AfterFunc starts to stop a
// context timer once its context is done.
package timerwheel
