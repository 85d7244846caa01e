package timerwheel_test

import (
	"context"
	"fmt"
	"time"

	timerwheel "github.com/timerwheel/timerwheel/bindings/go"
)

func ExampleNewTimer() {
	idle, err := timerwheel.NewTimer(20 * time.Millisecond)
	if err != nil {
		panic(err)
	}
	idle.Reset(30 * time.Millisecond) // activity: no value from before the Reset arrives
	select {
	case <-idle.C:
		fmt.Println("idle")
	case <-time.After(10 * time.Second):
		fmt.Println("no timeout")
	}
	// Output: idle
}

func ExampleAfterFuncContext() {
	session, hangUp := context.WithCancel(context.Background())
	_, err := timerwheel.AfterFuncContext(session, time.Hour, func() { fmt.Println("timed out") })
	if err != nil {
		panic(err)
	}
	hangUp() // stops the timer; no goroutine was waiting for it
	_, err = timerwheel.AfterFuncContext(session, time.Hour, func() { fmt.Println("timed out") })
	fmt.Println("after hang-up:", err)
	// Output: after hang-up: context canceled
}
