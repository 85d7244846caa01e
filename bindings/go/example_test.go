package timerwheel_test

import (
	"fmt"
	"time"

	timerwheel "github.com/timerwheel/timerwheel/bindings/go"
)

func ExampleAfterFunc() {
	done := make(chan string)
	_, err := timerwheel.AfterFunc(10*time.Millisecond, func() { done <- "fired" })
	if err != nil {
		panic(err)
	}
	fmt.Println(<-done)
	// Output: fired
}

func ExampleNew() {
	w, err := timerwheel.New(timerwheel.Config{Tick: time.Millisecond, MinWorkers: 1, MaxWorkers: 8})
	if err != nil {
		panic(err)
	}
	defer w.Close()

	done := make(chan struct{})
	start := time.Now()
	w.AfterFunc(50*time.Millisecond, func() { close(done) })
	<-done
	fmt.Println("waited at least 50ms:", time.Since(start) >= 50*time.Millisecond)
	// Output: waited at least 50ms: true
}

func ExampleTimer_Stop() {
	w, err := timerwheel.New(timerwheel.Config{})
	if err != nil {
		panic(err)
	}
	defer w.Close()

	t, _ := w.AfterFunc(time.Hour, func() { fmt.Println("never printed") })
	fmt.Println("first Stop:", t.Stop())
	fmt.Println("second Stop:", t.Stop())
	// Output:
	// first Stop: true
	// second Stop: false
}

func ExampleTimer_Reset() {
	w, err := timerwheel.New(timerwheel.Config{})
	if err != nil {
		panic(err)
	}
	defer w.Close()

	// An idle timeout, pushed back on every sign of life.
	idle := make(chan struct{})
	t, _ := w.AfterFunc(time.Hour, func() { close(idle) })
	fmt.Println("active timer moved:", t.Reset(20*time.Millisecond))
	<-idle
	fmt.Println("timed out")
	// Output:
	// active timer moved: true
	// timed out
}

func ExampleWheel_Every() {
	w, err := timerwheel.New(timerwheel.Config{})
	if err != nil {
		panic(err)
	}
	defer w.Close()

	ticks := make(chan int)
	n := 0
	var t *timerwheel.Timer
	ready := make(chan struct{})
	t, _ = w.Every(5*time.Millisecond, func() {
		<-ready
		n++ // runs of one periodic timer never overlap
		if n == 3 {
			fmt.Println("stopped from its own func:", t.Stop())
			ticks <- n
		}
	})
	close(ready)
	fmt.Println("ran", <-ticks, "times")
	// Output:
	// stopped from its own func: true
	// ran 3 times
}

func ExampleWheel_Stats() {
	w, err := timerwheel.New(timerwheel.Config{})
	if err != nil {
		panic(err)
	}
	for i := 0; i < 3; i++ {
		w.AfterFunc(time.Hour, func() {})
	}
	t, _ := w.AfterFunc(time.Hour, func() {})
	t.Stop()

	s := w.Stats()
	fmt.Println("added:", s.Added, "pending:", s.Pending, "cancelled:", s.Cancelled)
	w.Close()
	s = w.Stats()
	fmt.Println("after Close, discarded:", s.Discarded, "pending:", s.Pending)
	// Output:
	// added: 4 pending: 3 cancelled: 1
	// after Close, discarded: 3 pending: 0
}
