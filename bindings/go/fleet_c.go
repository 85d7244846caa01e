package timerwheel

// The C boundary of a fleet node (docs/contract.md, "A fleet node in C"). A handler's ctx
// is a runtime/cgo.Handle carried as an integer: C never holds a Go pointer.

/*
#include <stdint.h>
#include <stdlib.h>
#include "timerwheel.h"

// Exported from fleet.go.
extern int32_t twgoFleet(uintptr_t handle, uint64_t key, char *name, int64_t occurrence,
	int64_t version, int32_t shard, int64_t epoch, void *payload, size_t len);

// The tw_fleet_handler of every Go fleet handler.
static int32_t twgo_fleet_fire(const tw_fleet_token *token, const void *payload, size_t len,
		void *ctx) {
	return twgoFleet((uintptr_t)ctx, token->key, (char *)token->name,
		token->occurrence_unix_ms, token->version, token->shard, token->epoch,
		(void *)payload, len);
}

static tw_status twgo_fleet_handler_register(tw_fleet *f, const char *name, uintptr_t handle) {
	return tw_fleet_handler_register(f, name, twgo_fleet_fire, (void *)handle);
}
*/
import "C"

import (
	"time"
	"unsafe"
)

// cFleet is a node of the C library.
type cFleet = *C.tw_fleet

// cFleetCreate creates a node with s (zero fields: the library's defaults).
func cFleetCreate(s FleetSettings) (cFleet, C.tw_status) {
	var settings C.tw_fleet_settings
	C.tw_fleet_settings_init(&settings)
	if s.TTL != 0 {
		settings.ttl_ms = C.uint64_t(millis(s.TTL))
	}
	if s.Window != 0 {
		settings.window_ms = C.uint64_t(millis(s.Window))
	}
	if s.Poll != 0 {
		settings.poll_ms = C.uint64_t(millis(s.Poll))
	}
	if s.Batch != 0 {
		settings.batch = C.uint64_t(s.Batch)
	}
	if s.NoListen {
		settings.listen = 0
	}
	if s.Buffer != 0 {
		settings.buffer = C.uint64_t(s.Buffer)
	}
	settings.missed_points = C.uint64_t(s.MissedPoints)
	var f cFleet
	status := C.tw_fleet_create(&settings, &f)
	return f, C.tw_status(status)
}

// cFleetHandlerRegister registers the Go handler of handle for the timers named name.
func cFleetHandlerRegister(f cFleet, name string, handle uintptr) C.tw_status {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	return C.twgo_fleet_handler_register(f, cname, C.uintptr_t(handle))
}

// cFleetJoin joins the fleet at conninfo as node.
func cFleetJoin(f cFleet, conninfo, node string) C.tw_status {
	cinfo, cnode := C.CString(conninfo), C.CString(node)
	defer C.free(unsafe.Pointer(cinfo))
	defer C.free(unsafe.Pointer(cnode))
	return C.tw_status(C.tw_fleet_join(f, cinfo, cnode))
}

// cFleetAdd adds the timer t through the node.
func cFleetAdd(f cFleet, t DurableTimer) C.tw_status {
	return withCTimer(t, func(name *C.char, payload unsafe.Pointer, flags C.uint32_t) C.tw_status {
		return C.tw_status(C.tw_fleet_add(f, C.uint64_t(t.Key), name, payload,
			C.size_t(len(t.Payload)), C.int64_t(ceilUnixMilli(t.First)),
			C.uint64_t(millis(t.Period)), flags))
	})
}

// cFleetReset moves the next deadline of the timer (key, name) to when.
func cFleetReset(f cFleet, key uint64, name string, when time.Time) C.tw_status {
	return withCName(name, func(name *C.char) C.tw_status {
		return C.tw_status(C.tw_fleet_reset(f, C.uint64_t(key), name, C.int64_t(ceilUnixMilli(when))))
	})
}

// cFleetDelete removes the timer (key, name).
func cFleetDelete(f cFleet, key uint64, name string) C.tw_status {
	return withCName(name, func(name *C.char) C.tw_status {
		return C.tw_status(C.tw_fleet_delete(f, C.uint64_t(key), name))
	})
}

// cFleetAck acknowledges tokens; how many matched an unacknowledged fire.
func cFleetAck(f cFleet, tokens []FleetToken) (int, C.tw_status) {
	if len(tokens) == 0 {
		return 0, C.TW_OK
	}
	raw := make([]C.tw_fleet_token, len(tokens)) // Go memory holding C pointers only
	for i, t := range tokens {
		raw[i] = C.tw_fleet_token{key: C.uint64_t(t.Key), name: C.CString(t.Name),
			occurrence_unix_ms: C.int64_t(t.Occurrence.UnixMilli()), version: C.int64_t(t.Version),
			shard: C.int32_t(t.Shard), epoch: C.int64_t(t.Epoch)}
	}
	defer func() {
		for i := range raw {
			C.free(unsafe.Pointer(raw[i].name))
		}
	}()
	var acked C.size_t
	status := C.tw_status(C.tw_fleet_ack(f, &raw[0], C.size_t(len(raw)), &acked))
	return int(acked), status
}

// cFleetFlush writes the buffered changes; how many still wait.
func cFleetFlush(f cFleet) (int, C.tw_status) {
	var pending C.size_t
	status := C.tw_status(C.tw_fleet_flush(f, &pending))
	return int(pending), status
}

// cFleetLeave hands the node's shards over and stops it.
func cFleetLeave(f cFleet) C.tw_status {
	return C.tw_status(C.tw_fleet_leave(f))
}

// cFleetDestroy frees the node.
func cFleetDestroy(f cFleet) C.tw_status {
	return C.tw_status(C.tw_fleet_destroy(f))
}

// cFleetError is the message of the node's last error ("" if none).
func cFleetError(f cFleet) string {
	return cText(func(buf *C.char, n C.size_t, needed *C.size_t) C.tw_status {
		return C.tw_status(C.tw_fleet_error(f, buf, n, needed))
	})
}
