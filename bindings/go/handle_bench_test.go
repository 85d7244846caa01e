package timerwheel

import (
	"math/rand"
	"runtime/cgo"
	"testing"
)

// The registry against runtime/cgo.Handle for what a timer's handle goes through: b.N
// handles made while all stay live (as W1's pending timers), then ended in random order,
// half by a firing (look up and end) and half by a Stop (end). ns/op is one handle's life.
//
//	go test -run '^$' -bench Handles -benchtime 1000000x .
func BenchmarkHandles(b *testing.B) {
	t := &Timer{}
	b.Run("registry", func(b *testing.B) {
		var r registry
		order := rand.New(rand.NewSource(1)).Perm(b.N)
		handles := make([]uintptr, b.N)
		for i := range handles {
			handles[i] = r.add(t)
		}
		for _, i := range order {
			if i%2 == 0 {
				r.fired(handles[i])
			} else {
				r.release(handles[i])
			}
		}
	})
	b.Run("cgo.Handle", func(b *testing.B) {
		order := rand.New(rand.NewSource(1)).Perm(b.N)
		handles := make([]cgo.Handle, b.N)
		for i := range handles {
			handles[i] = cgo.NewHandle(t)
		}
		for _, i := range order {
			if i%2 == 0 {
				_ = handles[i].Value().(*Timer)
			}
			handles[i].Delete()
		}
	})
}
