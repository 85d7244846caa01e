package timerwheel

// The C boundary: the only file that calls into libtimerwheel. Every function here is a
// thin wrapper that converts Go values to C values and back; the rules of the library
// (which calls are safe when) are kept by wheel.go and timer.go. Where the header and the
// library come from is set by the build_*.go files.

/*
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "timerwheel.h"

// Exported from callback.go.
extern void twgoFire(uintptr_t handle);

// The handle whose callback this thread is running (0: none), for StopWait's check that
// it is not called from its own func.
static __thread uintptr_t twgo_current;

// The tw_callback of every Go timer: user_data carries a registry handle, never a Go pointer.
static void twgo_fire(tw_timer_id id, void *user_data) {
	(void)id;
	uintptr_t outer = twgo_current;
	twgo_current = (uintptr_t)user_data;
	twgoFire((uintptr_t)user_data);
	twgo_current = outer;
}

static uintptr_t twgo_current_handle(void) {
	return twgo_current;
}

// The queue of delivered fires: handles of one-shot Go timers whose callback ran, in the
// order they ran, waiting for the deliverer. queued counts every handle ever queued.
static pthread_mutex_t twgo_queue_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t twgo_queue_filled = PTHREAD_COND_INITIALIZER;
static uintptr_t *twgo_queue;
static size_t twgo_queue_len, twgo_queue_cap;
static uint64_t twgo_queued;

// The bell: a pipe whose read end the deliverers park on in Go (the runtime's poller, so a
// parked deliverer holds neither a processor nor a thread), one byte written for each
// parked deliverer woken. -1 when it could not be made: deliverers then wait in
// twgo_take_fires on twgo_queue_filled.
static int twgo_bell_read = -1, twgo_bell_write = -1;
// Deliverers parked on the bell and not yet rung.
static size_t twgo_parked;

// Makes the bell, once, before the first deliverer starts; its read end, or -1.
static int twgo_bell_open(void) {
	int fds[2];
	if (pipe(fds) != 0) {
		return -1;
	}
	for (int i = 0; i < 2; i++) {
		if (fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK) != 0 ||
				fcntl(fds[i], F_SETFD, FD_CLOEXEC) != 0) {
			close(fds[0]);
			close(fds[1]);
			return -1;
		}
	}
	twgo_bell_write = fds[1];
	twgo_bell_read = fds[0];
	return fds[0];
}

// Whether a parked deliverer is to be rung for the queue; if so it counts as rung. The
// caller holds twgo_queue_mu and rings (twgo_ring) once it has let it go.
static int twgo_take_parked(void) {
	if (twgo_parked == 0) {
		return 0;
	}
	twgo_parked--;
	return 1;
}

// Wakes one parked deliverer. The pipe never fills: it holds at most a byte per parked
// deliverer.
static void twgo_ring(void) {
	char b = 1;
	while (write(twgo_bell_write, &b, 1) < 0 && errno == EINTR) {
	}
}

// Appends a handle to the queue; 0 when it could not grow (nothing changes then).
static int twgo_queue_push(uintptr_t handle) {
	if (twgo_queue_len == twgo_queue_cap) {
		size_t cap = twgo_queue_cap == 0 ? 1024 : 2 * twgo_queue_cap;
		uintptr_t *grown = realloc(twgo_queue, cap * sizeof *grown);
		if (grown == NULL) {
			return 0;
		}
		twgo_queue = grown;
		twgo_queue_cap = cap;
	}
	twgo_queue[twgo_queue_len++] = handle;
	twgo_queued++;
	return 1;
}

// The tw_callback of a batched one-shot Go timer: queues its handle for the deliverer, or,
// when the queue cannot grow, runs the timer's func here as twgo_fire does.
static void twgo_fire_later(tw_timer_id id, void *user_data) {
	int ring = 0;
	pthread_mutex_lock(&twgo_queue_mu);
	int queued = twgo_queue_push((uintptr_t)user_data);
	if (queued && twgo_queue_len == 1) {
		if (twgo_bell_write >= 0) {
			ring = twgo_take_parked();
		} else {
			pthread_cond_signal(&twgo_queue_filled);
		}
	}
	pthread_mutex_unlock(&twgo_queue_mu);
	if (ring) {
		twgo_ring();
	}
	if (!queued) {
		twgo_fire(id, user_data);
	}
}

typedef struct twgo_taken {
	size_t n;        // handles written to out
	int last_idle;   // no other deliverer waits for the queue
	int park;        // none taken: the caller parks on the bell, which rings when one is queued
} twgo_taken;

// Deliverers waiting in twgo_take_fires (without a bell), and deliverers between a take
// and its twgo_accounted.
static size_t twgo_waiting, twgo_accounting;
static uint64_t twgo_taken_fires;

// Moves up to cap handles, the oldest, from the queue to out. When the queue is empty and
// wait is set, the caller is counted as parked (park: it waits on the bell) or, with no
// bell, this waits until the queue holds one. The caller calls twgo_accounted once it has
// counted what it took in their wheels (and after a take of none).
static twgo_taken twgo_take_fires(uintptr_t *out, size_t cap, int wait) {
	twgo_taken r = {0, 0, 0};
	int ring = 0;
	pthread_mutex_lock(&twgo_queue_mu);
	if (wait && twgo_queue_len == 0 && twgo_bell_read >= 0) {
		twgo_parked++;
		r.park = 1;
	}
	twgo_waiting++;
	while (wait && twgo_queue_len == 0 && !r.park) {
		pthread_cond_wait(&twgo_queue_filled, &twgo_queue_mu);
	}
	twgo_waiting--;
	r.n = twgo_queue_len < cap ? twgo_queue_len : cap;
	r.last_idle = twgo_waiting == 0 && twgo_parked == 0;
	memcpy(out, twgo_queue, r.n * sizeof *out);
	twgo_queue_len -= r.n;
	memmove(twgo_queue, twgo_queue + r.n, twgo_queue_len * sizeof *twgo_queue);
	twgo_taken_fires += r.n;
	twgo_accounting++;
	if (twgo_queue_len > 0) { // another deliverer takes the rest
		if (twgo_bell_write >= 0) {
			ring = twgo_take_parked();
		} else {
			pthread_cond_signal(&twgo_queue_filled);
		}
	}
	pthread_mutex_unlock(&twgo_queue_mu);
	if (ring) {
		twgo_ring();
	}
	return r;
}

static void twgo_accounted(void) {
	pthread_mutex_lock(&twgo_queue_mu);
	twgo_accounting--;
	pthread_mutex_unlock(&twgo_queue_mu);
}

// Whether every fire among the first `queued` has been taken and counted in its wheel.
static int twgo_accounted_through(uint64_t queued) {
	pthread_mutex_lock(&twgo_queue_mu);
	int done = twgo_taken_fires >= queued && twgo_accounting == 0;
	pthread_mutex_unlock(&twgo_queue_mu);
	return done;
}

static uint64_t twgo_queued_fires(void) {
	pthread_mutex_lock(&twgo_queue_mu);
	uint64_t n = twgo_queued;
	pthread_mutex_unlock(&twgo_queue_mu);
	return n;
}

typedef struct twgo_added {
	tw_status status;
	tw_timer_id id;
} twgo_added;

// Adds a one-shot timer, into the group `group` unless it is 0, its fires queued for the
// deliverer when batched. The id comes back by value so that no Go pointer is handed to C
// on this hot path.
static twgo_added twgo_add(tw_wheel *w, tw_group_id group, uint64_t delay_ms, uintptr_t handle,
		int batched) {
	twgo_added r = {TW_OK, 0};
	tw_callback fire = batched ? twgo_fire_later : twgo_fire;
	r.status = group == 0
		? tw_add(w, delay_ms, fire, (void *)handle, NULL, &r.id)
		: tw_group_add(w, group, delay_ms, fire, (void *)handle, NULL, &r.id);
	return r;
}

// Adds a periodic timer, its delay and period in nanoseconds (a time.Duration, unrounded);
// a timer of a group has them in milliseconds, rounded up.
static twgo_added twgo_add_periodic(tw_wheel *w, tw_group_id group, uint64_t delay_ns,
		uint64_t period_ns, tw_period_mode mode, uintptr_t handle) {
	twgo_added r = {TW_OK, 0};
	uint64_t ms = 1000000;
	r.status = group == 0
		? tw_add_periodic_ns(w, delay_ns, period_ns, mode, twgo_fire, (void *)handle, NULL,
			&r.id)
		: tw_group_add_periodic(w, group, delay_ns / ms + (delay_ns % ms != 0),
			period_ns / ms + (period_ns % ms != 0), mode, twgo_fire, (void *)handle, NULL,
			&r.id);
	return r;
}

typedef struct twgo_group {
	tw_status status;
	tw_group_id id;
} twgo_group;

static twgo_group twgo_group_create(tw_wheel *w) {
	twgo_group r = {TW_OK, 0};
	r.status = tw_group_create(w, NULL, NULL, &r.id);
	return r;
}

// Adds a fixed-rate timer on the schedule anchored at first_unix_ms.
static twgo_added twgo_add_periodic_at(tw_wheel *w, int64_t first_unix_ms, uint64_t period_ms,
		tw_missed missed, uintptr_t handle) {
	twgo_added r = {TW_OK, 0};
	r.status = tw_add_periodic_at(w, first_unix_ms, period_ms, TW_FIXED_RATE, missed,
		twgo_fire, (void *)handle, NULL, &r.id);
	return r;
}

// The timers of one tw_export, copied out under the wheel's locks, where no Go code may
// run: a malloc'd array (free it), grown by doubling. out_of_memory is set when it could
// not grow; the copy is then incomplete.
typedef struct twgo_exported {
	tw_status status;
	tw_timer_info *timers;
	size_t len, cap, running;
	int out_of_memory;
} twgo_exported;

static void twgo_export_one(void *ctx, const tw_timer_info *info) {
	twgo_exported *e = ctx;
	if (e->len == e->cap) {
		size_t cap = e->cap == 0 ? 64 : 2 * e->cap;
		tw_timer_info *grown = realloc(e->timers, cap * sizeof *grown);
		if (grown == NULL) {
			e->out_of_memory = 1;
			return;
		}
		e->timers = grown;
		e->cap = cap;
	}
	e->timers[e->len++] = *info;
}

static twgo_exported twgo_export(tw_wheel *w) {
	twgo_exported e = {TW_OK, NULL, 0, 0, 0, 0};
	e.status = tw_export(w, twgo_export_one, &e, &e.running);
	return e;
}

typedef struct twgo_created {
	tw_status status;
	tw_wheel *wheel;
} twgo_created;

static twgo_created twgo_create(tw_config cfg) {
	twgo_created r = {TW_OK, NULL};
	r.status = tw_create(&cfg, &r.wheel);
	return r;
}

// A copy of tw_config_check's message (malloc'd: free it), made in the same call, before
// another call on this thread can replace it; NULL when tw_create accepts cfg.
static char *twgo_config_check(tw_config cfg) {
	const char *why = tw_config_check(&cfg);
	return why == NULL ? NULL : strdup(why);
}
*/
import "C"

import (
	"errors"
	"time"
	"unsafe"
)

// cWheel is a libtimerwheel wheel.
type cWheel = *C.tw_wheel

// periodMode is how a periodic timer schedules its next run.
type periodMode = C.tw_period_mode

const (
	fixedRate  periodMode = C.TW_FIXED_RATE
	fixedDelay periodMode = C.TW_FIXED_DELAY
)

// cDefaultConfig returns the library's default configuration.
func cDefaultConfig() C.tw_config {
	var cfg C.tw_config
	C.tw_config_init(&cfg)
	return cfg
}

// cConfigCheck is the library's objection to cfg, naming the field out of range and its
// range; "" when tw_create accepts cfg.
func cConfigCheck(cfg C.tw_config) string {
	why := C.twgo_config_check(cfg)
	if why == nil {
		return ""
	}
	defer C.free(unsafe.Pointer(why))
	return C.GoString(why)
}

// cCreate starts a wheel with cfg.
func cCreate(cfg C.tw_config) (cWheel, error) {
	r := C.twgo_create(cfg)
	return r.wheel, statusErr(r.status)
}

// cDefault returns the process-wide shared wheel, or nil if it could not start.
func cDefault() cWheel {
	return C.tw_default()
}

// cAdd adds a timer that fires the registry entry of handle after delay, into the C group
// `group` unless it is 0; period 0 makes it a one-shot (its delay rounded up to the
// millisecond, see deadlines; its fires delivered in batches when batched, deliver.go),
// anything else a periodic timer whose delay and period reach the library to the
// nanosecond (rounded up to the millisecond in a group).
func cAdd(w cWheel, group uint64, delay, period time.Duration, mode periodMode,
	handle uintptr, batched bool) (uint64, error) {
	var r C.twgo_added
	g := C.tw_group_id(group)
	if period == 0 {
		r = C.twgo_add(w, g, C.uint64_t(millis(delay)), C.uintptr_t(handle), cBool(batched))
	} else {
		r = C.twgo_add_periodic(w, g, C.uint64_t(nanos(delay)), C.uint64_t(nanos(period)),
			mode, C.uintptr_t(handle))
	}
	return uint64(r.id), statusErr(r.status)
}

// cGroupCreate creates an open C group of timers.
func cGroupCreate(w cWheel) (uint64, error) {
	r := C.twgo_group_create(w)
	return uint64(r.id), statusErr(r.status)
}

// cGroupClose closes a C group: it takes no more timers.
func cGroupClose(w cWheel, group uint64) error {
	return statusErr(C.tw_group_close(w, C.tw_group_id(group)))
}

// cAddEveryFrom adds a fixed-rate timer on the schedule first, first + period, ... that
// fires the registry entry of handle; first rounds up to the millisecond (never early), the
// period is a whole number of milliseconds.
func cAddEveryFrom(w cWheel, first time.Time, period time.Duration, missed Missed,
	handle uintptr) (uint64, error) {
	r := C.twgo_add_periodic_at(w, C.int64_t(ceilUnixMilli(first)), C.uint64_t(millis(period)),
		C.tw_missed(missed), C.uintptr_t(handle))
	return uint64(r.id), statusErr(r.status)
}

// cPending is one timer of an export, as the library saw it.
type cPending struct {
	handle     uintptr
	due        time.Time // to the millisecond, rounded down
	period     time.Duration
	fixedDelay bool
}

var errExportMemory = errors.New("timerwheel: export: out of memory")

// cExport copies out the pending timers of the wheel at one instant, in deadline order,
// with the number of periodic timers left out because their callback was running.
func cExport(w cWheel) ([]cPending, int, error) {
	e := C.twgo_export(w)
	defer C.free(unsafe.Pointer(e.timers))
	if err := statusErr(e.status); err != nil {
		return nil, 0, err
	}
	if e.out_of_memory != 0 {
		return nil, 0, errExportMemory
	}
	infos := unsafe.Slice(e.timers, e.len)
	pending := make([]cPending, len(infos))
	for i := range infos {
		info := &infos[i]
		pending[i] = cPending{
			handle:     uintptr(info.user_data),
			due:        time.UnixMilli(int64(info.due_unix_ms)),
			period:     time.Duration(info.period_ns),
			fixedDelay: info.kind == C.TW_TIMER_PERIODIC && info.mode == C.TW_FIXED_DELAY,
		}
	}
	return pending, int(e.running), nil
}

// cCurrentHandle is the handle of the Go timer whose callback the calling thread runs; 0
// on a thread outside the library's callbacks.
func cCurrentHandle() uintptr {
	return uintptr(C.twgo_current_handle())
}

// cBellOpen makes the pipe that parked deliverers wait on (see twgo_bell_open); its read
// end, or -1 when it could not be made.
func cBellOpen() int {
	return int(C.twgo_bell_open())
}

// cTakeFires moves up to len(handles) queued fires into handles: how many, and whether no
// other deliverer is waiting for more. When none is queued and wait is set, the caller is
// counted as parked and park is true (it reads a byte from the bell before it takes
// again), or, with no bell, the call waits for a fire. cAccounted must follow once they
// are counted in their wheels.
func cTakeFires(handles []uintptr, wait bool) (n int, lastIdle, park bool) {
	r := C.twgo_take_fires((*C.uintptr_t)(unsafe.Pointer(&handles[0])), C.size_t(len(handles)),
		cBool(wait))
	return int(r.n), r.last_idle != 0, r.park != 0
}

func cAccounted() {
	C.twgo_accounted()
}

// cAccountedThrough reports whether each of the first queued fires ever queued has been
// taken and counted in its wheel.
func cAccountedThrough(queued uint64) bool {
	return C.twgo_accounted_through(C.uint64_t(queued)) != 0
}

// cQueuedFires is how many fires have been queued for the deliverer so far.
func cQueuedFires() uint64 {
	return uint64(C.twgo_queued_fires())
}

func cBool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// cDelete stops a timer.
func cDelete(w cWheel, id uint64) error {
	return statusErr(C.tw_delete(w, C.tw_timer_id(id)))
}

// cDeleteMany deletes the timers of ids in one crossing into C, an error (nil: deleted)
// each.
func cDeleteMany(w cWheel, ids []uint64) []error {
	if len(ids) == 0 {
		return nil
	}
	statuses := make([]uint32, len(ids)) // enum tw_status, as cgo types it
	cDeleteInto(w, ids, statuses)
	errs := make([]error, len(ids))
	for i, s := range statuses {
		errs[i] = statusErr(s)
	}
	return errs
}

// cDeleteInto deletes the timers of ids in one crossing into C, writing each one's status
// into statuses (as long as ids); no allocation, for the deferred deletes of Stop.
func cDeleteInto(w cWheel, ids []uint64, statuses []uint32) {
	// Its own status is TW_OK here (w, ids and statuses are set): the statuses say it all.
	_ = C.tw_delete_many(w, (*C.tw_timer_id)(unsafe.Pointer(&ids[0])), C.size_t(len(ids)),
		&statuses[0])
}

// cReset re-arms a pending timer delayMs from now.
func cReset(w cWheel, id, delayMs uint64) error {
	return statusErr(C.tw_reset(w, C.tw_timer_id(id), C.uint64_t(delayMs)))
}

// cStats reads the wheel's counters.
func cStats(w cWheel) (Stats, error) {
	s := C.tw_stats{size: C.sizeof_tw_stats}
	if err := statusErr(C.tw_get_stats(w, &s)); err != nil {
		return Stats{}, err
	}
	return statsFromC(&s), nil
}

// cStatsRecent reads the counters of the last window, clamped to the library's range.
func cStatsRecent(w cWheel, window time.Duration) (Stats, error) {
	ms := min(max(window.Milliseconds(), 1000), 60000)
	s := C.tw_stats{size: C.sizeof_tw_stats}
	if err := statusErr(C.tw_get_stats_recent(w, C.uint64_t(ms), &s)); err != nil {
		return Stats{}, err
	}
	return statsFromC(&s), nil
}

// cMetricsText reads the wheel's Prometheus text, growing the buffer while it is too
// small (the text grows as the wheel runs).
func cMetricsText(w cWheel) (string, error) {
	buf := make([]byte, 8192)
	for {
		var needed C.size_t
		status := C.tw_metrics_text(w, (*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)), &needed)
		if status != C.TW_ERR_TOO_SMALL {
			if err := statusErr(status); err != nil {
				return "", err
			}
			return string(buf[:needed-1]), nil
		}
		buf = make([]byte, int(needed)+1024)
	}
}

// cDestroy shuts the wheel down and frees it.
func cDestroy(w cWheel) error {
	return statusErr(C.tw_destroy(w))
}

// cDestroyNowait shuts the wheel down without waiting for running callbacks (the caller's
// own included); the library frees it when the last of them has returned.
func cDestroyNowait(w cWheel) error {
	return statusErr(C.tw_destroy_nowait(w))
}

// cStatusText is the library's text of a tw_status.
func cStatusText(status C.tw_status) string {
	return C.GoString(C.tw_status_str(status))
}

// cAdvance moves a virtual clock forward by d (rounded up to the millisecond) and runs
// what falls due; how many ran.
func cAdvance(w cWheel, d time.Duration) (int, error) {
	var ran C.size_t
	err := statusErr(C.tw_advance(w, C.uint64_t(millis(d)), &ran))
	return int(ran), err
}

// cAdvanceToNext moves a virtual clock to the next deadline and runs what is due there.
func cAdvanceToNext(w cWheel) (int, error) {
	var ran C.size_t
	err := statusErr(C.tw_advance_to_next(w, &ran))
	return int(ran), err
}

// cNowMs is the wheel's clock in Unix ms: a virtual clock's time, or the system clock.
func cNowMs(w cWheel) int64 {
	return int64(C.tw_now_ms(w))
}

// cRecordCallbackFailure has the library count the callback running on this thread as
// failed (in callback_panics); ErrInvalid when the thread runs no callback of the library.
func cRecordCallbackFailure() error {
	return statusErr(C.tw_record_callback_failure())
}

// cVersion is the library's version string.
func cVersion() string {
	return C.GoString(C.tw_version())
}

// statusErr is the error of a tw_status, nil for TW_OK. (The header's functions return
// `enum tw_status`, which cgo types as uint32, its struct fields C.tw_status.)
func statusErr[S ~uint32](s S) error {
	return errFromCode(int(s))
}
