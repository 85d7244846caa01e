package timerwheel

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fleetServer is a private PostgreSQL cluster started by timerwheel-fleet's
// fleet-test-server (make check-go builds it): its connection string, and SQL through the
// helper's stdin.
type fleetServer struct {
	conninfo string
	mu       sync.Mutex
	stdin    io.WriteCloser
	stdout   *bufio.Reader
}

const fleetShards = 4

// quickFleet has short leases: the tests stay short.
var quickFleet = FleetSettings{TTL: 2 * time.Second, Window: 10 * time.Second, Poll: 100 * time.Millisecond}

// startFleetServer starts the cluster for the test and stops it at its end; it skips the
// test, saying why, when PostgreSQL is not installed.
func startFleetServer(t *testing.T) *fleetServer {
	t.Helper()
	path := os.Getenv("TW_FLEET_TEST_SERVER")
	if path == "" {
		path = filepath.Join("..", "..", "target", "release", "fleet-test-server")
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s is missing (make check-go builds it): %v", path, err)
	}
	cmd := exec.Command(path, fmt.Sprint(fleetShards))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &fleetServer{stdin: stdin, stdout: bufio.NewReader(stdout)}
	first, err := s.stdout.ReadString('\n')
	first = strings.TrimSpace(first)
	if reason, ok := strings.CutPrefix(first, "unavailable "); ok {
		_ = cmd.Wait()
		t.Skip(reason)
	}
	conninfo, ok := strings.CutPrefix(first, "conninfo ")
	if err != nil || !ok {
		t.Fatalf("fleet-test-server: %q, %v", first, err)
	}
	s.conninfo = conninfo
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	return s
}

// sql runs one statement; the first column of its first row ("" if none).
func (s *fleetServer) sql(t *testing.T, statement string) string {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := fmt.Fprintln(s.stdin, statement); err != nil {
		t.Fatal(err)
	}
	answer, err := s.stdout.ReadString('\n')
	value, ok := strings.CutPrefix(strings.TrimSuffix(answer, "\n"), "ok ")
	if err != nil || !ok {
		t.Fatalf("%s: %q, %v", statement, answer, err)
	}
	return value
}

type fleetFired struct {
	token   FleetToken
	payload []byte
}

// joinFleet joins a node named node with a handler "charge" that reports every fire on
// the returned channel and leaves the ack to the test; closed at the test's end.
func joinFleet(t *testing.T, s *fleetServer, node string) (*Fleet, <-chan fleetFired) {
	t.Helper()
	f, err := NewFleet(quickFleet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	ch := make(chan fleetFired, 64)
	if err := f.Handle("charge", func(tok FleetToken, p []byte) Ack {
		ch <- fleetFired{tok, p}
		return AckLater
	}); err != nil {
		t.Fatal(err)
	}
	if err := f.Join(s.conninfo, node); err != nil {
		t.Fatalf("Join: %v", err)
	}
	return f, ch
}

func nextFleetFire(t *testing.T, ch <-chan fleetFired) fleetFired {
	t.Helper()
	select {
	case f := <-ch:
		return f
	case <-time.After(20 * time.Second):
		t.Fatal("no fire within 20 s")
		return fleetFired{}
	}
}

func TestFleet(t *testing.T) {
	s := startFleetServer(t)
	t.Run("FiresOnceWithItsToken", func(t *testing.T) { fleetFiresOnce(t, s) })
	t.Run("AckAfterAnotherNodeTookTheShardIsFenced", func(t *testing.T) { fleetFenced(t, s) })
	t.Run("HandlerCannotCloseItsNode", func(t *testing.T) { fleetHandlerCallsBack(t, s) })
	t.Run("BadArgumentsChangeNothing", func(t *testing.T) { fleetBadArguments(t, s) })
	t.Run("MissedPointsCoalesceIntoTheLatest", func(t *testing.T) { fleetMissedPoints(t, s) })
	// Last: it stops the server for a while.
	t.Run("ChangesWaitInABoundedBuffer", func(t *testing.T) { fleetBuffered(t, s) })
}

func fleetFiresOnce(t *testing.T, s *fleetServer) {
	f, ch := joinFleet(t, s, "go-a")
	// A second Add of a pending (key, name) is refused: checked on a timer an hour away, as
	// one due soon may have fired (and ended) before the second Add, which then adds anew.
	later := time.Now().Add(time.Hour)
	if err := f.Add(DurableTimer{Key: 70, Name: "charge", Payload: []byte("cents=25"), First: later}); err != nil {
		t.Fatalf("Add: %v", err)
	}
	if err := f.Add(DurableTimer{Key: 70, Name: "charge", First: later}); !errors.Is(err, ErrExists) {
		t.Fatalf("a second Add: %v, want ErrExists", err)
	}
	if err := f.Delete(70, "charge"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	due := time.Now().Add(300 * time.Millisecond)
	if err := f.Add(DurableTimer{Key: 7, Name: "charge", Payload: []byte("cents=25"), First: due}); err != nil {
		t.Fatalf("Add: %v", err)
	}
	got := nextFleetFire(t, ch)
	if time.Now().Before(got.token.Occurrence) {
		t.Fatalf("fired early: %+v", got.token)
	}
	epoch := s.sql(t, fmt.Sprintf("SELECT epoch FROM tw_fleet_shards WHERE shard = %d", got.token.Shard))
	tok := got.token
	if tok.Key != 7 || tok.Name != "charge" || string(got.payload) != "cents=25" ||
		tok.Occurrence.UnixMilli() != ceilUnixMilli(due) || fmt.Sprint(tok.Epoch) != epoch || tok.Epoch <= 0 {
		t.Fatalf("fire %+v %q, shard epoch %s", tok, got.payload, epoch)
	}
	select {
	case again := <-ch:
		t.Fatalf("fired twice: %+v", again.token)
	case <-time.After(600 * time.Millisecond):
	}
	if n, err := f.Ack(tok); n != 1 || err != nil {
		t.Fatalf("Ack: %d, %v", n, err)
	}
	if n := s.sql(t, "SELECT count(*) FROM tw_fleet_fires WHERE key = 7"); n != "0" {
		t.Fatalf("%s fires left", n)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if n := s.sql(t, "SELECT count(*) FROM tw_fleet_shards WHERE owner = 'go-a'"); n != "0" {
		t.Fatalf("Close left %s shards owned", n)
	}
	if err := f.Add(DurableTimer{Key: 8, Name: "charge", First: time.Now()}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Add after Close: %v", err)
	}
}

func fleetFenced(t *testing.T, s *fleetServer) {
	f, ch := joinFleet(t, s, "go-a")
	if err := f.Add(DurableTimer{Key: 9, Name: "charge", First: time.Now()}); err != nil {
		t.Fatal(err)
	}
	tok := nextFleetFire(t, ch).token
	// Another node takes the shard: the lease row moves to it under the next epoch, as an
	// acquisition after this node's lease expired would.
	s.sql(t, fmt.Sprintf("UPDATE tw_fleet_shards SET owner = 'b', epoch = epoch + 1, "+
		"lease_until = now() + interval '1 hour' WHERE shard = %d", tok.Shard))
	n, err := f.Ack(tok)
	var fe *FleetError
	if !errors.Is(err, ErrFenced) || !errors.As(err, &fe) || n != 0 ||
		!strings.Contains(fe.Message, fmt.Sprintf("shard %d", tok.Shard)) {
		t.Fatalf("Ack after the take-over: %d, %v", n, err)
	}
	if left := s.sql(t, "SELECT count(*) FROM tw_fleet_fires WHERE key = 9"); left != "1" {
		t.Fatalf("%s fires left, want the one for the new owner", left)
	}
	_ = f.Close()
	s.sql(t, "UPDATE tw_fleet_shards SET owner = NULL, lease_until = '-infinity'")
}

func fleetHandlerCallsBack(t *testing.T, s *fleetServer) {
	f, err := NewFleet(quickFleet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	results := make(chan error, 3)
	if err := f.Handle("call_back", func(tok FleetToken, _ []byte) Ack {
		_, err := f.Ack(tok)
		results <- err
		results <- f.Leave()
		results <- f.Close()
		return AckLater
	}); err != nil {
		t.Fatal(err)
	}
	if err := f.Join(s.conninfo, "go-c"); err != nil {
		t.Fatal(err)
	}
	if err := f.Add(DurableTimer{Key: 11, Name: "call_back", First: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []error{nil, ErrBusy, ErrBusy} {
		select {
		case err := <-results:
			if !errors.Is(err, want) || (want == nil && err != nil) {
				t.Fatalf("call %d from the handler: %v, want %v", i, err, want)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the handler did not run")
		}
	}
	if err := f.Reset(11, "call_back", time.Now()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("still joined, the fired one-shot gone: %v", err)
	}
}

func fleetBadArguments(t *testing.T, s *fleetServer) {
	if _, err := NewFleet(FleetSettings{TTL: -time.Second}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a negative TTL: %v", err)
	}
	short, _ := NewFleet(FleetSettings{TTL: 10 * time.Millisecond})
	defer short.Close()
	if err := short.Join(s.conninfo, "go-x"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a TTL of 10 ms: %v", err)
	}
	f, err := NewFleet(quickFleet)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recordNothing := func(FleetToken, []byte) Ack { return AckLater }
	if err := f.Handle("charge", recordNothing); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"twice":     f.Handle("charge", recordNothing),
		"empty":     f.Handle("", recordNothing),
		"nil":       f.Handle("other", nil),
		"unjoined":  f.Add(DurableTimer{Key: 1, Name: "charge", First: time.Now()}),
		"empty key": f.Join(s.conninfo, ""),
	} {
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	s.sql(t, "CREATE DATABASE go_no_schema")
	empty := strings.Replace(s.conninfo, "dbname=timerwheel", "dbname=go_no_schema", 1)
	if err := f.Join(empty, "go-a"); !errors.Is(err, ErrStore) || !strings.Contains(err.Error(), "no timerwheel fleet schema") {
		t.Fatalf("a database without the schema: %v", err)
	}
	if err := f.Join(s.conninfo, "go-a"); err != nil {
		t.Fatalf("Join after a refusal: %v", err)
	}
	before := s.sql(t, "SELECT count(*) FROM tw_fleet_timers")
	if err := f.Add(DurableTimer{Key: 1, Name: "nobody", First: time.Now()}); !errors.Is(err, ErrNoHandler) ||
		!strings.Contains(err.Error(), "nobody") {
		t.Fatalf("an unknown handler: %v", err)
	}
	if err := f.Add(DurableTimer{Key: 1, Name: "charge", First: time.Now(), Period: -time.Second}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a negative period: %v", err)
	}
	if err := f.Delete(404, "charge"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Delete of no timer: %v", err)
	}
	if err := f.Join(s.conninfo, "go-a"); !errors.Is(err, ErrBusy) {
		t.Fatalf("a second Join: %v", err)
	}
	if after := s.sql(t, "SELECT count(*) FROM tw_fleet_timers"); after != before {
		t.Fatalf("timers %s, were %s", after, before)
	}
}

// fleetPeriod is the period of the timer whose points pass while no node holds its shard.
const fleetPeriod = 200 * time.Millisecond

// pointsAfterAGap returns the points a node with settings fires (n of them, waited for) of a
// periodic timer whose first 10 and a half periods passed while no node held its shard,
// and when the node joined.
func pointsAfterAGap(t *testing.T, s *fleetServer, settings FleetSettings, key uint64, n int) ([]time.Time, time.Time) {
	t.Helper()
	adder, _ := joinFleet(t, s, "go-m0")
	later := time.Now().Add(time.Hour)
	if err := adder.Add(DurableTimer{Key: key, Name: "charge", First: later, Period: fleetPeriod}); err != nil {
		t.Fatal(err)
	}
	if err := adder.Close(); err != nil {
		t.Fatal(err)
	}
	// The shard has no owner now: its points pass as if the timer had been added long ago.
	first := time.Now().Add(-21 * fleetPeriod / 2).Truncate(time.Millisecond)
	s.sql(t, fmt.Sprintf("UPDATE tw_fleet_timers SET due_ms = %d WHERE key = %d", first.UnixMilli(), key))
	f, err := NewFleet(settings)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ch := make(chan fleetFired, 64)
	if err := f.Handle("charge", func(tok FleetToken, p []byte) Ack {
		ch <- fleetFired{tok, p}
		return AckNow
	}); err != nil {
		t.Fatal(err)
	}
	joined := time.Now()
	if err := f.Join(s.conninfo, "go-m1"); err != nil {
		t.Fatal(err)
	}
	var points []time.Time
	for len(points) < n {
		// Fires of other keys, left unacknowledged by the tests before, come again.
		if tok := nextFleetFire(t, ch).token; tok.Key == key {
			points = append(points, tok.Occurrence)
		}
	}
	if err := f.Delete(key, "charge"); err != nil {
		t.Fatal(err)
	}
	for _, p := range points {
		if p.Before(first) || p.Sub(first)%fleetPeriod != 0 {
			t.Fatalf("off the schedule from %v: %v", first, points)
		}
	}
	return points, joined
}

func fleetMissedPoints(t *testing.T, s *fleetServer) {
	coalesce := quickFleet
	coalesce.MissedPoints = MissedCoalesce
	points, joined := pointsAfterAGap(t, s, coalesce, 31, 1)
	if !points[0].After(joined.Add(-fleetPeriod)) {
		t.Fatalf("MissedCoalesce: first fire at %v, want the latest point (joined at %v)", points[0], joined)
	}
	points, joined = pointsAfterAGap(t, s, quickFleet, 32, 11)
	if !points[0].Before(joined.Add(-10 * fleetPeriod)) {
		t.Fatalf("MissedEach: first fire at %v, want the oldest point (joined at %v)", points[0], joined)
	}
	for i := 1; i < len(points); i++ {
		if points[i].Sub(points[i-1]) != fleetPeriod {
			t.Fatalf("MissedEach: not every point in order: %v", points)
		}
	}
	for _, bad := range []MissedPoints{-1, MissedCoalesce + 1, 1 << 32} {
		settings := quickFleet
		settings.MissedPoints = bad
		if f, err := NewFleet(settings); !errors.Is(err, ErrInvalid) || f != nil {
			t.Fatalf("MissedPoints %d: %v, want ErrInvalid", bad, err)
		}
	}
}

func fleetBuffered(t *testing.T, s *fleetServer) {
	settings := quickFleet
	settings.Buffer = 2
	f, err := NewFleet(settings)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Handle("charge", func(FleetToken, []byte) Ack { return AckLater }); err != nil {
		t.Fatal(err)
	}
	if err := f.Join(s.conninfo, "go-d"); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	if err := f.Add(DurableTimer{Key: 21, Name: "charge", First: later}); err != nil {
		t.Fatal(err)
	}
	s.sql(t, `\stop`)
	started := false
	defer func() {
		if !started {
			s.sql(t, `\start`)
		}
	}()
	if err := f.Add(DurableTimer{Key: 22, Name: "charge", First: later}); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("an add while PostgreSQL is down: %v, want ErrUnreachable (kept)", err)
	}
	if err := f.Delete(21, "charge"); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("a delete while PostgreSQL is down: %v, want ErrUnreachable (kept)", err)
	}
	if err := f.Add(DurableTimer{Key: 23, Name: "charge", First: later}); !errors.Is(err, ErrFull) {
		t.Fatalf("an add past the buffer's bound: %v, want ErrFull", err)
	}
	if pending, err := f.Flush(); pending != 2 || !errors.Is(err, ErrUnreachable) ||
		strings.Contains(err.Error(), s.conninfo) {
		t.Fatalf("Flush while down: %d, %v", pending, err)
	}
	// Leaving or closing would drop them: both refuse, and the node keeps them.
	if err := f.Leave(); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("Leave while down with changes buffered: %v, want ErrUnreachable", err)
	}
	if err := f.Close(); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("Close while down with changes buffered: %v, want ErrUnreachable", err)
	}
	if pending, _ := f.Flush(); pending != 2 {
		t.Fatalf("after the refused Leave and Close %d changes wait, want 2", pending)
	}
	s.sql(t, `\start`)
	started = true
	deadline := time.Now().Add(20 * time.Second)
	for {
		pending, err := f.Flush()
		if err == nil && pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Flush after the restart: %d, %v", pending, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Written in order: the add of 22, then the delete of 21; the refused add of 23 never.
	for key, want := range map[int]string{21: "0", 22: "1", 23: "0"} {
		if got := s.sql(t, fmt.Sprintf("SELECT count(*) FROM tw_fleet_timers WHERE key = %d", key)); got != want {
			t.Errorf("timers of key %d: %s, want %s", key, got, want)
		}
	}
}

func TestFleetConnectionStringNeverInErrors(t *testing.T) {
	f, err := NewFleet(quickFleet)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const secret = "s3cret-pw"
	for conninfo, want := range map[string]error{
		"host=127.0.0.1 password=" + secret + " port=notaport":            ErrInvalid,
		"host=127.0.0.1 port=1 password=" + secret + " connect_timeout=2": ErrUnreachable,
		"postgresql://u:" + secret + "@127.0.0.1:1/db?connect_timeout=2":  ErrUnreachable,
	} {
		err := f.Join(conninfo, "go-a")
		if !errors.Is(err, want) || strings.Contains(err.Error(), secret) {
			t.Errorf("Join: %v, want %v without the password", err, want)
		}
	}
}
