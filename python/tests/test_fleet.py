"""timerwheel.Fleet against a private PostgreSQL (one cluster for the module, started by
timerwheel-fleet's `fleet-test-server`, which `make test-python` builds)."""

import math
import os
import pathlib
import subprocess
import threading
import time

import pytest

import timerwheel
from timerwheel import (
    DurableExistsError,
    DurableNoHandlerError,
    DurableStoreError,
    FleetBufferFullError,
    FleetFencedError,
    FleetUnreachableError,
    TimerwheelBusyError,
    TimerwheelClosedError,
    TimerwheelError,
)

from conftest import wait_until

if not hasattr(timerwheel, "Fleet"):
    pytest.skip(
        "this build of timerwheel has no Fleet (built without the cargo feature `fleet`: "
        "docs/fleet.md)",
        allow_module_level=True,
    )

SHARDS = 4
# Short leases: the tests stay short.
QUICK = dict(ttl=2.0, window=10.0, poll=0.1)
SERVER = pathlib.Path(
    os.environ.get(
        "TW_FLEET_TEST_SERVER",
        pathlib.Path(__file__).resolve().parents[2] / "target/release/fleet-test-server",
    )
)


class Server:
    """The private cluster: its connection string, and SQL through the helper's stdin."""

    def __init__(self):
        if not SERVER.exists():
            pytest.fail(f"{SERVER} is missing: `make test-python` builds it")
        self.process = subprocess.Popen(
            [str(SERVER), str(SHARDS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        first = self.process.stdout.readline().strip()
        if first.startswith("unavailable "):
            self.process.wait()
            pytest.skip(first[len("unavailable ") :])
        assert first.startswith("conninfo "), first
        self.conninfo = first[len("conninfo ") :]
        self.lock = threading.Lock()

    def sql(self, statement):
        """The first column of the first row, as text ('' if none)."""
        with self.lock:
            self.process.stdin.write(statement + "\n")
            self.process.stdin.flush()
            answer = self.process.stdout.readline().rstrip("\n")
        assert answer.startswith("ok "), answer
        return answer[len("ok ") :]

    def stop(self):
        self.process.stdin.close()
        self.process.wait(timeout=60)


@pytest.fixture(scope="module")
def server():
    s = Server()
    yield s
    s.stop()


def now():
    return time.time()


class Recorder:
    """A handler that records (token, payload) and leaves the ack to the test."""

    def __init__(self):
        self.fired = []

    def __call__(self, token, payload):
        self.fired.append((token, payload))
        return False


def test_a_timer_fires_once_with_its_token_and_the_block_leaves(server):
    charge = Recorder()
    fleet = timerwheel.Fleet(**QUICK)
    fleet.register_handler("charge", charge)
    with fleet.join(server.conninfo, "py-a") as node:
        assert node is fleet
        due = now() + 0.3
        assert fleet.add(7, "charge", due, payload=b"cents=25") == "written"
        with pytest.raises(DurableExistsError):
            fleet.add(7, "charge", due)
        wait_until(lambda: len(charge.fired) == 1)
        token, payload = charge.fired[0]
        assert time.time() >= token.occurrence - 0.001, "never early"
        assert (token.key, token.name, payload) == (7, "charge", b"cents=25")
        assert token.occurrence_ms == math.ceil(due * 1000)
        epoch = server.sql(f"SELECT epoch FROM tw_fleet_shards WHERE shard = {token.shard}")
        assert token.epoch == int(epoch) > 0
        time.sleep(0.6)
        assert len(charge.fired) == 1, "fired once"
        assert fleet.ack([token]) == 1
        assert server.sql("SELECT count(*) FROM tw_fleet_fires WHERE key = 7") == "0"
        assert fleet.pending == 0
    owners = server.sql("SELECT count(*) FROM tw_fleet_shards WHERE owner = 'py-a'")
    assert owners == "0", "the block's exit handed every shard back"
    with pytest.raises(TimerwheelClosedError):
        fleet.add(8, "charge", now())
    fleet.leave()  # a second leave does nothing


def test_an_ack_after_another_node_took_the_shard_is_fenced(server):
    charge = Recorder()
    fleet = timerwheel.Fleet(**QUICK)
    fleet.register_handler("charge", charge)
    with fleet.join(server.conninfo, "py-a"):
        fleet.add(9, "charge", now())
        wait_until(lambda: len(charge.fired) == 1)
        token = charge.fired[0][0]
        # Another node takes the shard: the lease row moves to it under the next epoch, as
        # an acquisition after this node's lease expired would.
        server.sql(
            "UPDATE tw_fleet_shards SET owner = 'b', epoch = epoch + 1, "
            f"lease_until = now() + interval '1 hour' WHERE shard = {token.shard}"
        )
        with pytest.raises(FleetFencedError, match=f"shard {token.shard}"):
            fleet.ack([token])
        assert server.sql("SELECT count(*) FROM tw_fleet_fires WHERE key = 9") == "1"
    server.sql("UPDATE tw_fleet_shards SET owner = NULL, lease_until = '-infinity'")


def test_a_handler_may_call_its_node_but_not_leave_it(server):
    results = []
    fleet = timerwheel.Fleet(**QUICK)

    def handler(token, payload):
        results.append(fleet.ack([token]))
        try:
            fleet.leave()
        except TimerwheelBusyError as error:
            results.append(error)
        return False

    fleet.register_handler("call_back", handler)
    with fleet.join(server.conninfo, "py-c"):
        fleet.add(11, "call_back", now())
        wait_until(lambda: len(results) == 2)
        assert results[0] == 1
        assert isinstance(results[1], TimerwheelBusyError)
        assert fleet.pending == 0, "still joined"


PERIOD = 0.2


def points_fired_after_a_gap(server, key, fires, **settings):
    """The occurrences (ms) a node with ``settings`` fires, ``fires`` of them waited for, of
    a periodic timer whose first 10 and a half periods passed while no node held its shard;
    and the time (ms) the node joined."""
    adder = timerwheel.Fleet(**QUICK)
    adder.register_handler("tick", Recorder())
    with adder.join(server.conninfo, "py-m0"):
        adder.add(key, "tick", now() + 3600, period=PERIOD)
    # The shard has no owner now: its points pass as if the timer had been added long ago.
    first = int(now() * 1000 - 10.5 * PERIOD * 1000)
    server.sql(f"UPDATE tw_fleet_timers SET due_ms = {first} WHERE key = {key}")
    tick = Recorder()
    fleet = timerwheel.Fleet(**QUICK, **settings)
    fleet.register_handler("tick", tick)
    joined = now() * 1000
    with fleet.join(server.conninfo, "py-m1"):
        wait_until(lambda: len(tick.fired) >= fires, timeout=20)
        fleet.delete(key, "tick")
    server.sql(f"DELETE FROM tw_fleet_fires WHERE key = {key}")
    points = [token.occurrence_ms for token, _ in tick.fired]
    assert all((p - first) % int(PERIOD * 1000) == 0 for p in points), (first, points)
    return points, joined


def test_missed_points_coalesce_into_one_fire_for_the_latest(server):
    points, joined = points_fired_after_a_gap(server, 31, 1, missed_points="coalesce")
    assert points[0] > joined - PERIOD * 1000, (points, joined)


def test_missed_points_are_each_delivered_by_default(server):
    points, joined = points_fired_after_a_gap(server, 32, 11)
    assert points[0] < joined - 10 * PERIOD * 1000, (points, joined)
    assert points[:11] == [points[0] + i * int(PERIOD * 1000) for i in range(11)]


def test_an_unknown_missed_points_policy_is_refused():
    with pytest.raises(ValueError, match="missed_points must be 'each' or 'coalesce'"):
        timerwheel.Fleet(missed_points="latest")
    with pytest.raises(TypeError):
        timerwheel.Fleet(missed_points=1)


def test_bad_arguments_raise_clearly_and_change_nothing(server):
    fleet = timerwheel.Fleet(**QUICK)
    fleet.register_handler("charge", Recorder())
    with pytest.raises(ValueError, match="registered"):
        fleet.register_handler("charge", Recorder())
    with pytest.raises(TypeError):
        fleet.register_handler("other", 3)
    with pytest.raises(RuntimeError, match="join"):
        fleet.add(1, "charge", now())
    with pytest.raises(ValueError):
        timerwheel.Fleet(ttl=-1.0)
    with pytest.raises(ValueError):
        timerwheel.Fleet(ttl=0.01).join(server.conninfo, "py-x")

    secret = "s3cret-pw"
    with pytest.raises(ValueError) as bad:
        fleet.join(f"host=127.0.0.1 password={secret} port=notaport", "py-a")
    assert secret not in str(bad.value)
    with pytest.raises(FleetUnreachableError) as unreachable:
        fleet.join(f"host=127.0.0.1 port=1 password={secret} connect_timeout=2", "py-a")
    assert secret not in str(unreachable.value)

    server.sql("CREATE DATABASE no_schema")
    empty = server.conninfo.replace("dbname=timerwheel", "dbname=no_schema")
    with pytest.raises(DurableStoreError, match="no timerwheel fleet schema"):
        fleet.join(empty, "py-a")

    with fleet.join(server.conninfo, "py-a"):
        before = server.sql("SELECT count(*) FROM tw_fleet_timers")
        with pytest.raises(DurableNoHandlerError, match="nobody"):
            fleet.add(1, "nobody", now())
        with pytest.raises(ValueError):
            fleet.add(1, "charge", now(), period=-1.0)
        with pytest.raises(TimerwheelError):
            fleet.reset(404, "charge", now())
        with pytest.raises(TimerwheelError):
            fleet.delete(404, "charge")
        with pytest.raises(TimerwheelBusyError):
            fleet.join(server.conninfo, "py-a")
        with pytest.raises(RuntimeError, match="before join"):
            fleet.register_handler("late", Recorder())
        assert server.sql("SELECT count(*) FROM tw_fleet_timers") == before


def test_changes_wait_in_a_bounded_buffer_while_postgres_is_down(server):
    """Last in the module: it stops the server for a while."""
    fleet = timerwheel.Fleet(buffer=2, **QUICK)
    fleet.register_handler("charge", Recorder())
    later = now() + 3600
    with fleet.join(server.conninfo, "py-d"):
        assert fleet.add(21, "charge", later) == "written"
        server.sql("\\stop")
        try:
            assert fleet.add(22, "charge", later) == "buffered"
            assert fleet.delete(21, "charge") == "buffered"
            with pytest.raises(FleetBufferFullError, match="not taken"):
                fleet.add(23, "charge", later)
            assert fleet.pending == 2
            with pytest.raises(FleetUnreachableError, match="2 changes wait") as down:
                fleet.flush()
            assert server.conninfo not in str(down.value)
            # A leave would drop them: it raises and the node stays, keeping them.
            with pytest.raises(FleetUnreachableError, match="2 changes wait"):
                fleet.leave()
            assert fleet.pending == 2
        finally:
            server.sql("\\start")
        wait_until(lambda: fleet.pending == 0, timeout=20)
        fleet.flush()
    count = "SELECT count(*) FROM tw_fleet_timers WHERE key = {}"
    # Written in order: the add of 22, then the delete of 21; the refused add of 23 never.
    assert [server.sql(count.format(k)) for k in (21, 22, 23)] == ["0", "1", "0"]
