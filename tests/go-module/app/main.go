// A program of a module of its own that uses timerwheel as `go get` fetched it into the
// module cache (make test-go-module): one timer fires.
package main

import (
	"fmt"
	"os"
	"time"

	timerwheel "github.com/timerwheel/timerwheel/bindings/go"
)

func main() {
	w, err := timerwheel.New(timerwheel.Config{MaxWorkers: 2})
	if err != nil {
		fmt.Fprintln(os.Stderr, "app:", err)
		os.Exit(1)
	}
	fired := make(chan struct{})
	if _, err := w.AfterFunc(5*time.Millisecond, func() { close(fired) }); err != nil {
		fmt.Fprintln(os.Stderr, "app:", err)
		os.Exit(1)
	}
	select {
	case <-fired:
	case <-time.After(10 * time.Second):
		fmt.Fprintln(os.Stderr, "app: the timer did not fire")
		os.Exit(1)
	}
	added := w.Stats().Added
	w.Close()
	fmt.Printf("app: timerwheel %s, timer fired, %d added\n", timerwheel.Version(), added)
}
