package timerwheel

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fired is one delivery to a durable handler.
type fired struct {
	token   Token
	payload []byte
}

// openDurable starts a wheel on the store at path with a handler "charge" that reports
// every fire on the returned channel and answers ack.
func openDurable(t *testing.T, path string, ack Ack) (*Wheel, <-chan fired) {
	t.Helper()
	w := newWheel(t, Config{StorePath: path, Durability: DurableSync})
	ch := make(chan fired, 64)
	if err := w.HandleDurable("charge", func(tok Token, p []byte) Ack {
		ch <- fired{tok, p}
		return ack
	}); err != nil {
		t.Fatalf("HandleDurable: %v", err)
	}
	if err := w.OpenDurable(); err != nil {
		t.Fatalf("OpenDurable: %v", err)
	}
	return w, ch
}

func mustAddDurable(t *testing.T, w *Wheel, d DurableTimer) {
	t.Helper()
	if err := w.AddDurable(d); err != nil {
		t.Fatalf("AddDurable(%+v): %v", d, err)
	}
}

// expectNoFire fails the test if ch delivers within a short wait.
func expectNoFire(t *testing.T, ch <-chan fired) {
	t.Helper()
	select {
	case f := <-ch:
		t.Fatalf("unexpected fire %+v", f.token)
	case <-time.After(200 * time.Millisecond):
	}
}

func TestDurableTokenAndPayload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	w, ch := openDurable(t, path, AckNow)
	first := time.Now().Add(20 * time.Millisecond)
	payload := []byte("order 17\x00binary")
	mustAddDurable(t, w, DurableTimer{Key: 17, Name: "charge", Payload: payload, First: first})
	payload[0] = 'X' // the store has its own copy
	f := receive(t, ch, "the fire")
	if f.token.Key != 17 || f.token.Name != "charge" || f.token.Epoch == 0 {
		t.Fatalf("token %+v", f.token)
	}
	if want := time.UnixMilli(first.Add(time.Millisecond - 1).UnixMilli()); !f.token.Occurrence.Equal(want) {
		t.Fatalf("occurrence %v, want the deadline %v", f.token.Occurrence, want)
	}
	if string(f.payload) != "order 17\x00binary" {
		t.Fatalf("payload %q", f.payload)
	}
	_ = w.Close()
	_, ch = openDurable(t, path, AckNow)
	expectNoFire(t, ch) // AckNow acknowledged it
}

func TestDurableAckLaterOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	w, ch := openDurable(t, path, AckLater)
	mustAddDurable(t, w, DurableTimer{Key: 1, Name: "charge", First: time.Now()})
	f := receive(t, ch, "the fire")
	stale := f.token
	stale.Epoch++
	if n, err := w.Ack(f.token, f.token, stale); n != 1 || err != nil {
		t.Fatalf("Ack(token, token again, other epoch) = %d, %v; want 1, nil", n, err)
	}
	if n, err := w.Ack(); n != 0 || err != nil {
		t.Fatalf("Ack() = %d, %v", n, err)
	}
	if _, err := w.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	s, err := w.DurableStats()
	if err != nil || s.Acks != 1 || s.UnackedFires != 0 || s.PendingEvents != 0 || s.LastSeq != 4 ||
		s.DurableSeq != 4 || s.Commits == 0 || s.LastError != nil {
		t.Fatalf("DurableStats() = %+v, %v; want 4 events (the open's generation of epochs, add, fire, ack) committed", s, err)
	}
	_ = w.Close()
	_, ch = openDurable(t, path, AckLater)
	expectNoFire(t, ch) // acknowledged by Ack
}

func TestDurableExistsReplaceResetDelete(t *testing.T) {
	w, ch := openDurable(t, filepath.Join(t.TempDir(), "store.db"), AckNow)
	later := time.Now().Add(time.Hour)
	d := DurableTimer{Key: 5, Name: "charge", Payload: []byte("a"), First: later}
	mustAddDurable(t, w, d)
	if err := w.AddDurable(d); !errors.Is(err, ErrExists) {
		t.Fatalf("second AddDurable: %v, want ErrExists", err)
	}
	d.Replace, d.Payload = true, []byte("b")
	mustAddDurable(t, w, d)
	if err := w.ResetDurable(5, "charge", time.Now()); err != nil {
		t.Fatalf("ResetDurable: %v", err)
	}
	if f := receive(t, ch, "the reset fire"); string(f.payload) != "b" {
		t.Fatalf("payload %q, want the replacement's", f.payload)
	}
	if err := w.ResetDurable(6, "charge", later); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ResetDurable of no timer: %v, want ErrNotFound", err)
	}
	mustAddDurable(t, w, DurableTimer{Key: 7, Name: "charge", First: time.Now().Add(100 * time.Millisecond)})
	if err := w.DeleteDurable(7, "charge"); err != nil {
		t.Fatalf("DeleteDurable: %v", err)
	}
	if err := w.DeleteDurable(7, "charge"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second DeleteDurable: %v, want ErrNotFound", err)
	}
	expectNoFire(t, ch)
}

func TestDurableNoHandler(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	w, _ := openDurable(t, path, AckNow)
	err := w.AddDurable(DurableTimer{Key: 1, Name: "refund", First: time.Now().Add(time.Hour)})
	if !errors.Is(err, ErrNoHandler) {
		t.Fatalf("AddDurable of an unregistered name: %v, want ErrNoHandler", err)
	}
	mustAddDurable(t, w, DurableTimer{Key: 1, Name: "charge", First: time.Now().Add(time.Hour)})
	_ = w.Close()

	bare := newWheel(t, Config{StorePath: path})
	err = bare.OpenDurable()
	if !errors.Is(err, ErrNoHandler) || !strings.Contains(err.Error(), "charge") {
		t.Fatalf("OpenDurable without the stored timer's handler: %v", err)
	}
	if err := bare.HandleDurable("charge", func(Token, []byte) Ack { return AckNow }); err != nil {
		t.Fatalf("HandleDurable after a refused open: %v", err)
	}
	if err := bare.OpenDurable(); err != nil {
		t.Fatalf("OpenDurable once the handler is there: %v", err)
	}
	if err := bare.HandleDurable("late", func(Token, []byte) Ack { return AckNow }); !errors.Is(err, ErrBusy) {
		t.Fatalf("HandleDurable after OpenDurable: %v, want ErrBusy", err)
	}
}

func TestDurableLockedStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	openDurable(t, path, AckNow)
	second := newWheel(t, Config{StorePath: path})
	if err := second.HandleDurable("charge", func(Token, []byte) Ack { return AckNow }); err != nil {
		t.Fatal(err)
	}
	err := second.OpenDurable()
	var se *StoreError
	if !errors.As(err, &se) || !errors.Is(err, ErrStore) || !strings.Contains(se.Message, "lock") {
		t.Fatalf("second OpenDurable of a store: %v, want a *StoreError about the lock", err)
	}
}

func TestDurableBadUse(t *testing.T) {
	w := newWheel(t, Config{})
	if err := w.OpenDurable(); !errors.Is(err, ErrInvalid) {
		t.Fatalf("OpenDurable without StorePath: %v", err)
	}
	if err := w.HandleDurable("charge", nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("nil handler: %v", err)
	}
	if _, err := New(Config{StorePath: "x", StoreBatch: -1}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("negative StoreBatch: %v", err)
	}
	_ = w.Close()
	if _, err := w.Flush(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Flush after Close: %v", err)
	}
}

func TestDurableHandlerPanic(t *testing.T) {
	panics := make(chan any, 1)
	w := newWheel(t, Config{StorePath: filepath.Join(t.TempDir(), "store.db"),
		OnPanic: func(v any) { panics <- v }})
	tokens := make(chan Token, 1)
	if err := w.HandleDurable("charge", func(tok Token, _ []byte) Ack {
		tokens <- tok
		panic("boom")
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.OpenDurable(); err != nil {
		t.Fatal(err)
	}
	mustAddDurable(t, w, DurableTimer{Key: 1, Name: "charge", First: time.Now()})
	tok := receive(t, tokens, "the fire")
	if v := receive(t, panics, "OnPanic"); v != "boom" {
		t.Fatalf("OnPanic got %v", v)
	}
	eventually(t, "the panic counted", func() bool { return w.Stats().CallbackPanics == 1 })
	if n, err := w.Ack(tok); n != 1 || err != nil {
		t.Fatalf("Ack of the panicked fire = %d, %v; want 1 (it stayed unacknowledged)", n, err)
	}
}

// The child of TestDurableRedeliveredAfterKill: adds a timer, prints the token of its fire
// once it is journalled, and waits to be killed.
const durableChildEnv = "TIMERWHEEL_DURABLE_CHILD_STORE"

func TestDurableRedeliveredAfterKill(t *testing.T) {
	if path := os.Getenv(durableChildEnv); path != "" {
		durableChild(path)
		return
	}
	path := filepath.Join(t.TempDir(), "store.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestDurableRedeliveredAfterKill$")
	cmd.Env = append(os.Environ(), durableChildEnv+"="+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			if strings.HasPrefix(s.Text(), "token ") {
				lines <- s.Text()
				return
			}
		}
		close(lines)
	}()
	line := receive(t, lines, "the child's token")
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if line == "" {
		t.Fatalf("the child printed no token; stderr:\n%s", stderr.String())
	}

	w, ch := openDurable(t, path, AckLater)
	f := receive(t, ch, "the unacknowledged fire again")
	if got := "token " + formatToken(f.token); got != line {
		t.Fatalf("after the kill: %s, before: %s", got, line)
	}
	if n, err := w.Ack(f.token); n != 1 || err != nil {
		t.Fatalf("Ack = %d, %v", n, err)
	}
}

func durableChild(path string) {
	w, err := New(Config{StorePath: path, Durability: DurableSync})
	if err == nil {
		tokens := make(chan Token, 1)
		err = w.HandleDurable("charge", func(tok Token, _ []byte) Ack {
			tokens <- tok
			return AckLater
		})
		if err == nil {
			err = w.OpenDurable()
		}
		if err == nil {
			err = w.AddDurable(DurableTimer{Key: 42, Name: "charge", Payload: []byte("p"),
				First: time.Now()})
		}
		if err == nil {
			tok := <-tokens
			if _, err = w.Flush(); err == nil {
				fmt.Println("token " + formatToken(tok))
				time.Sleep(time.Hour) // until killed
			}
		}
	}
	fmt.Fprintln(os.Stderr, "child:", err)
	os.Exit(1)
}

func formatToken(t Token) string {
	return fmt.Sprintf("%d %s %d %d", t.Key, t.Name, t.Occurrence.UnixMilli(), t.Epoch)
}

func TestDurableMissedPoints(t *testing.T) {
	start := time.UnixMilli(1_700_000_000_000)
	for _, tc := range []struct {
		missed MissedPoints
		fires  int
	}{{MissedEach, 10}, {MissedCoalesce, 1}} {
		path := filepath.Join(t.TempDir(), "store.db")
		count := func(Token, []byte) Ack { return AckNow }
		w := newWheel(t, Config{VirtualStart: start, StorePath: path})
		if err := w.HandleDurable("tick", count); err != nil {
			t.Fatal(err)
		}
		if err := w.OpenDurable(); err != nil {
			t.Fatal(err)
		}
		mustAddDurable(t, w, DurableTimer{Key: 1, Name: "tick", First: start.Add(time.Second),
			Period: time.Second})
		_ = w.Close()

		fires := 0
		w = newWheel(t, Config{VirtualStart: start.Add(10500 * time.Millisecond),
			StorePath: path, MissedPoints: tc.missed})
		if err := w.HandleDurable("tick", func(Token, []byte) Ack { fires++; return AckNow }); err != nil {
			t.Fatal(err)
		}
		if err := w.OpenDurable(); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Advance(0); err != nil {
			t.Fatal(err)
		}
		if fires != tc.fires {
			t.Fatalf("MissedPoints %d: %d fires of the missed points, want %d", tc.missed, fires, tc.fires)
		}
	}
}

// On a virtual clock a durable handler runs inside Advance, as a func does: Advance from
// it is ErrBusy and Close from it returns (neither waits for itself).
func TestDurableHandlerInsideAdvance(t *testing.T) {
	start := time.UnixMilli(1_700_000_000_000)
	w := newWheel(t, Config{VirtualStart: start, StorePath: filepath.Join(t.TempDir(), "s.db")})
	inside := make(chan error, 2)
	if err := w.HandleDurable("tick", func(Token, []byte) Ack {
		_, err := w.Advance(time.Second)
		inside <- err
		inside <- w.Close()
		return AckNow
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.OpenDurable(); err != nil {
		t.Fatal(err)
	}
	mustAddDurable(t, w, DurableTimer{Key: 1, Name: "tick", First: start})
	done := make(chan struct{})
	go func() {
		_, _ = w.Advance(time.Millisecond)
		close(done)
	}()
	if err := receive(t, inside, "Advance from the handler"); !errors.Is(err, ErrBusy) {
		t.Fatalf("Advance from a durable handler: %v, want ErrBusy", err)
	}
	if err := receive(t, inside, "Close from the handler"); err != nil {
		t.Fatalf("Close from a durable handler: %v", err)
	}
	receive(t, done, "the Advance that ran the handler")
}

// FlushTo makes a sequence durable; one not handed out yet is an error at once.
func TestFlushToASequence(t *testing.T) {
	w, _ := openDurable(t, filepath.Join(t.TempDir(), "store.db"), AckNow)
	mustAddDurable(t, w, DurableTimer{Key: 1, Name: "charge", First: time.Now().Add(time.Hour)})
	s, err := w.DurableStats()
	if err != nil {
		t.Fatalf("DurableStats: %v", err)
	}
	if durable, err := w.FlushTo(s.LastSeq); err != nil || durable < s.LastSeq {
		t.Fatalf("FlushTo(%d) = %d, %v", s.LastSeq, durable, err)
	}
	if _, err := w.FlushTo(s.LastSeq + 1); !errors.Is(err, ErrInvalid) {
		t.Fatalf("FlushTo(last + 1) = %v; want ErrInvalid", err)
	}
	_ = w.Close()
}
