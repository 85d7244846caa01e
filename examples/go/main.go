// A session with an idle timeout that activity pushes back, and a periodic charge that
// ends with the session's context.
//
//	cd examples/go && go run .
package main

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	timerwheel "github.com/timerwheel/timerwheel/bindings/go"
)

func main() {
	w, err := timerwheel.New(timerwheel.Config{Tick: time.Millisecond, MaxWorkers: 4})
	if err != nil {
		panic(err)
	}
	defer w.Close() // waits for running callbacks, discards what is still pending

	session, hangUp := context.WithCancel(context.Background())
	var charges atomic.Int64
	idle, err := w.NewTimer(100 * time.Millisecond) // 100 ms of silence
	if err != nil {
		panic(err)
	}
	_, err = w.EveryContext(session, 20*time.Millisecond, func() { charges.Add(1) }) // every 20 ms
	if err != nil {
		panic(err)
	}

	for i := 0; i < 5; i++ { // activity pushes the idle timeout back
		time.Sleep(50 * time.Millisecond)
		idle.Reset(100 * time.Millisecond)
	}
	<-idle.C // silence: the timeout fires
	hangUp() // the session's charges stop with its context

	s := w.Stats()
	fmt.Printf("session closed after %d charges; timers added %d, late p99 %v\n",
		charges.Load(), s.Added, s.LateP99)
	if charges.Load() == 0 {
		os.Exit(1)
	}
}
