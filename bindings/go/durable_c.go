package timerwheel

// The C boundary of durable timers (docs/contract.md, "Durable timers"). A handler's ctx
// is a runtime/cgo.Handle carried as an integer: C never holds a Go pointer.

/*
#include <stdint.h>
#include <stdlib.h>
#include "timerwheel.h"

// Exported from durable.go.
extern int32_t twgoDurable(uintptr_t handle, uint64_t key, char *name, int64_t occurrence,
	uint64_t epoch, void *payload, size_t len);

// The tw_handler of every Go durable handler.
static int32_t twgo_durable_fire(const tw_token *token, const void *payload, size_t len,
		void *ctx) {
	return twgoDurable((uintptr_t)ctx, token->key, (char *)token->name,
		token->occurrence_unix_ms, token->epoch, (void *)payload, len);
}

static tw_status twgo_handler_register(tw_wheel *w, const char *name, uintptr_t handle) {
	return tw_handler_register(w, name, twgo_durable_fire, (void *)handle);
}
*/
import "C"

import (
	"time"
	"unsafe"
)

// cHandlerRegister registers the Go handler of handle for the durable timers named name.
func cHandlerRegister(w cWheel, name string, handle uintptr) C.tw_status {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	return C.twgo_handler_register(w, cname, C.uintptr_t(handle))
}

// cDurableOpen opens the wheel's store.
func cDurableOpen(w cWheel) C.tw_status {
	return C.tw_status(C.tw_durable_open(w))
}

// cDurableAdd adds the durable timer t.
func cDurableAdd(w cWheel, t DurableTimer) C.tw_status {
	return withCTimer(t, func(name *C.char, payload unsafe.Pointer, flags C.uint32_t) C.tw_status {
		return C.tw_status(C.tw_durable_add(w, C.uint64_t(t.Key), name, payload,
			C.size_t(len(t.Payload)), C.int64_t(ceilUnixMilli(t.First)),
			C.uint64_t(millis(t.Period)), flags))
	})
}

// withCTimer calls add with t's name, a C copy of its payload (NULL when empty) and its
// flags, freed after it returned.
func withCTimer(t DurableTimer, add func(name *C.char, payload unsafe.Pointer, flags C.uint32_t) C.tw_status) C.tw_status {
	var payload unsafe.Pointer
	if len(t.Payload) > 0 {
		payload = C.CBytes(t.Payload)
		defer C.free(payload)
	}
	var flags C.uint32_t
	if t.Replace {
		flags = C.TW_DURABLE_REPLACE
	}
	return withCName(t.Name, func(name *C.char) C.tw_status { return add(name, payload, flags) })
}

// withCName calls call with a C copy of name, freed after it returned.
func withCName(name string, call func(*C.char) C.tw_status) C.tw_status {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	return call(cname)
}

// cDurableReset moves the next deadline of the durable timer (key, name) to when.
func cDurableReset(w cWheel, key uint64, name string, when time.Time) C.tw_status {
	return withCName(name, func(name *C.char) C.tw_status {
		return C.tw_status(C.tw_durable_reset(w, C.uint64_t(key), name, C.int64_t(ceilUnixMilli(when))))
	})
}

// cDurableDelete removes the durable timer (key, name).
func cDurableDelete(w cWheel, key uint64, name string) C.tw_status {
	return withCName(name, func(name *C.char) C.tw_status {
		return C.tw_status(C.tw_durable_delete(w, C.uint64_t(key), name))
	})
}

// cDurableAck acknowledges tokens; how many matched an unacknowledged fire.
func cDurableAck(w cWheel, tokens []Token) (int, C.tw_status) {
	if len(tokens) == 0 {
		return 0, C.TW_OK
	}
	raw := make([]C.tw_token, len(tokens)) // Go memory holding C pointers only
	for i, t := range tokens {
		raw[i] = C.tw_token{key: C.uint64_t(t.Key), name: C.CString(t.Name),
			occurrence_unix_ms: C.int64_t(t.Occurrence.UnixMilli()), epoch: C.uint64_t(t.Epoch)}
	}
	defer func() {
		for i := range raw {
			C.free(unsafe.Pointer(raw[i].name))
		}
	}()
	var acked C.size_t
	status := C.tw_status(C.tw_durable_ack(w, &raw[0], C.size_t(len(raw)), &acked))
	return int(acked), status
}

// cDurableFlush commits everything queued; the durable sequence number.
func cDurableFlush(w cWheel) (uint64, C.tw_status) {
	var seq C.uint64_t
	status := C.tw_status(C.tw_durable_flush(w, &seq))
	return uint64(seq), status
}

// cDurableFlushTo commits the changes up to seq; the durable sequence number.
func cDurableFlushTo(w cWheel, seq uint64) (uint64, C.tw_status) {
	var durable C.uint64_t
	status := C.tw_status(C.tw_durable_flush_to(w, C.uint64_t(seq), &durable))
	return uint64(durable), status
}

// cDurableStats reads the counters of the wheel's durable store.
func cDurableStats(w cWheel) (DurableStats, C.tw_status) {
	s := C.tw_durable_stats{size: C.size_t(unsafe.Sizeof(C.tw_durable_stats{}))}
	status := C.tw_status(C.tw_durable_get_stats(w, &s))
	return DurableStats{
		LastSeq:       uint64(s.last_seq),
		DurableSeq:    uint64(s.durable_seq),
		PendingEvents: uint64(s.pending_events),
		Commits:       uint64(s.commits),
		FailedCommits: uint64(s.failed_commits),
		Acks:          uint64(s.acks),
		Redelivered:   uint64(s.redelivered),
		Timers:        uint64(s.timers),
		UnackedFires:  uint64(s.unacked_fires),
		LastError:     statusErr(C.tw_status(s.last_error)),
	}, status
}

// cDurableError is the message of the wheel's last durable error ("" if none).
func cDurableError(w cWheel) string {
	return cText(func(buf *C.char, n C.size_t, needed *C.size_t) C.tw_status {
		return C.tw_status(C.tw_durable_error(w, buf, n, needed))
	})
}

// cText is the text a call writes as tw_metrics_text does ("" if it fails), its buffer
// grown to the size the call asks for.
func cText(write func(buf *C.char, n C.size_t, needed *C.size_t) C.tw_status) string {
	buf := make([]byte, 512)
	for {
		var needed C.size_t
		status := write((*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)), &needed)
		switch {
		case status == C.TW_ERR_TOO_SMALL:
			buf = make([]byte, int(needed))
		case status != C.TW_OK || needed == 0:
			return ""
		default:
			return string(buf[:needed-1])
		}
	}
}
