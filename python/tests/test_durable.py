"""Durable timers (docs/durable.md): handlers by name, tokens, acks, the errors, and a
process killed with SIGKILL whose unacknowledged fires come back with their tokens."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from timerwheel import (
    DurableExistsError,
    DurableNoHandlerError,
    DurableStoreError,
    TimerwheelError,
    Token,
    Wheel,
)

START = 1_704_067_200.0  # 2024-01-01T00:00:00Z


def virtual(path, **kwargs):
    return Wheel(virtual_clock=START, store_path=str(path), durability="sync", **kwargs)


def recorder(answer=False):
    fires = []

    def handler(token, payload):
        fires.append((token, payload))
        return answer

    return fires, handler


def test_fires_carry_their_token_and_payload(tmp_path):
    fires, handler = recorder()
    with virtual(tmp_path / "store.db") as w:
        w.register_handler("charge", handler)
        w.durable_open()
        w.durable_add(42, "charge", START + 1, payload=b"session 42", period=1)
        w.advance(2.5)
        assert [t.occurrence_ms for t, _ in fires] == [1_704_067_201_000, 1_704_067_202_000]
        assert {(t.key, t.name, p) for t, p in fires} == {(42, "charge", b"session 42")}
        assert fires[0][0].epoch == fires[1][0].epoch
        assert fires[0][0].occurrence == START + 1
        assert w.durable_stats()["unacked_fires"] == 2
        tokens = [t for t, _ in fires]
        assert w.durable_ack(tokens) == 2
        assert w.durable_ack(tokens) == 0  # acknowledged already: changes nothing
        assert w.durable_stats()["unacked_fires"] == 0
        w.durable_flush()
        stats = w.durable_stats()
        assert stats["acks"] == 2 and stats["commits"] >= 1 and stats["pending_events"] == 0
        # the open's generation of epochs, the add, 2 fires, 2 acks
        assert stats["durable_seq"] == stats["last_seq"] == 6


def test_a_handler_returning_true_acknowledges_at_once(tmp_path):
    fires, handler = recorder(answer=True)
    with virtual(tmp_path / "store.db") as w:
        w.register_handler("idle", handler)
        w.durable_open()
        w.durable_add(7, "idle", START + 1)
        w.advance(2)
        assert len(fires) == 1
        assert w.durable_stats()["unacked_fires"] == 0
        assert w.durable_ack([fires[0][0]]) == 0


def test_tokens_compare_and_hash_by_value():
    a, b = Token(1, "charge", 1000, 3), Token(1, "charge", 1000, 3)
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a != Token(1, "charge", 1000, 4)
    assert "occurrence_ms=1000" in repr(a)


def test_an_existing_key_and_name_is_refused_unless_replaced(tmp_path):
    fires, handler = recorder()
    with virtual(tmp_path / "store.db") as w:
        w.register_handler("charge", handler)
        w.durable_open()
        w.durable_add(1, "charge", START + 5)
        with pytest.raises(DurableExistsError, match="durable_add"):
            w.durable_add(1, "charge", START + 1)
        w.advance(2)
        assert fires == []  # the refused add changed nothing
        w.durable_add(1, "charge", START + 3, replace=True)
        w.advance(2)
        assert [t.occurrence_ms for t, _ in fires] == [1_704_067_203_000]


def test_unknown_names_and_missing_timers(tmp_path):
    with virtual(tmp_path / "store.db") as w:
        w.register_handler("charge", lambda token, payload: True)
        w.durable_open()
        with pytest.raises(DurableNoHandlerError, match="nobody"):
            w.durable_add(1, "nobody", START + 1)
        with pytest.raises(TimerwheelError):
            w.durable_reset(1, "charge", START + 1)
        with pytest.raises(TimerwheelError):
            w.durable_delete(1, "charge")
        with pytest.raises(RuntimeError, match="before durable_open"):
            w.register_handler("late", lambda token, payload: True)
        with pytest.raises(RuntimeError, match="open already"):
            w.durable_open()


def test_calls_in_the_wrong_state(tmp_path):
    with Wheel(virtual_clock=START) as w:
        with pytest.raises(RuntimeError, match="store_path"):
            w.register_handler("charge", lambda token, payload: True)
        with pytest.raises(RuntimeError, match="store_path"):
            w.durable_add(1, "charge", START + 1)
    with virtual(tmp_path / "store.db") as w:
        with pytest.raises(RuntimeError, match="durable_open"):
            w.durable_flush()
        with pytest.raises(TypeError):
            w.register_handler("charge", 42)
        w.register_handler("charge", lambda token, payload: True)
        with pytest.raises(ValueError, match="registered under"):
            w.register_handler("charge", lambda token, payload: True)
    with pytest.raises(ValueError, match="durability"):
        Wheel(store_path=str(tmp_path / "x.db"), durability="later")
    with pytest.raises(ValueError, match="missed_points"):
        Wheel(store_path=str(tmp_path / "x.db"), missed_points="some")


def test_store_errors_carry_their_message(tmp_path):
    path = tmp_path / "store.db"
    with virtual(path) as first:
        first.register_handler("charge", lambda token, payload: True)
        first.durable_open()
        with virtual(path) as second:
            second.register_handler("charge", lambda token, payload: True)
            with pytest.raises(DurableStoreError, match="lock") as raised:
                second.durable_open()
            assert isinstance(raised.value, OSError)
    other = tmp_path / "notes.txt"
    other.write_bytes(b"not a database at all, " * 100)
    with virtual(other) as w:
        w.register_handler("charge", lambda token, payload: True)
        with pytest.raises(DurableStoreError):
            w.durable_open()
    assert other.read_bytes() == b"not a database at all, " * 100


def test_an_unknown_handler_fails_the_open_and_leaves_the_store(tmp_path):
    path = tmp_path / "store.db"
    with virtual(path) as w:
        w.register_handler("charge", lambda token, payload: True)
        w.durable_open()
        w.durable_add(9, "charge", START + 1)
    fires, handler = recorder()
    with virtual(path) as w:
        w.register_handler("other", handler)
        with pytest.raises(DurableNoHandlerError, match="charge"):
            w.durable_open()
        w.register_handler("charge", handler)  # the failed open left it registering
        w.durable_open()
        w.advance(2)
        assert [(t.key, t.name) for t, _ in fires] == [(9, "charge")]


CHILD = textwrap.dedent(
    """
    import os, signal, sys, time
    from timerwheel import Wheel

    store, record = sys.argv[1], sys.argv[2]
    fires = []

    def handler(token, payload):
        fires.append(token)
        with open(record, "a") as f:
            f.write(f"{token.key} {token.name} {token.occurrence_ms} {token.epoch}\\n")
        return False  # acknowledged later, or never

    w = Wheel(store_path=store, durability="sync")
    w.register_handler("charge", handler)
    w.durable_open()
    w.durable_add(5, "charge", time.time() + 0.05, payload=b"p", period=0.05)
    while len(fires) < 4:
        time.sleep(0.01)
    w.durable_ack(fires[:1])
    with open(record, "a") as f:
        f.write("acked\\n")
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def test_unacknowledged_fires_survive_sigkill_with_their_tokens(tmp_path):
    store, record = str(tmp_path / "store.db"), tmp_path / "record.txt"
    child = subprocess.run([sys.executable, "-c", CHILD, store, str(record)], timeout=60)
    assert child.returncode == -signal.SIGKILL
    lines = record.read_text().splitlines()
    acked_at = lines.index("acked")
    seen = [Token(int(k), n, int(o), int(e)) for k, n, o, e in (l.split() for l in lines[:acked_at])]
    acked, unacked = seen[0], set(seen[1:])

    fires, handler = recorder(answer=True)
    with Wheel(store_path=store) as w:
        w.register_handler("charge", handler)
        w.durable_open()
        deadline = time.monotonic() + 30
        while not unacked <= {t for t, _ in fires} and time.monotonic() < deadline:
            time.sleep(0.01)
        again = {t for t, _ in fires}
        assert unacked <= again, "an unacknowledged fire was not delivered again"
        assert acked not in again, "an acknowledged fire was delivered again"
        assert {p for _, p in fires} == {b"p"}
        w.durable_delete(5, "charge")


def test_a_flush_to_a_sequence_makes_it_durable_and_refuses_one_not_handed_out(tmp_path):
    _, handler = recorder(answer=True)
    with Wheel(virtual_clock=START, store_path=str(tmp_path / "s.db"), durability="async") as w:
        w.register_handler("charge", handler)
        w.durable_open()
        w.durable_add(1, "charge", START + 60)
        mine = w.durable_stats()["last_seq"]
        w.durable_add(2, "charge", START + 60)
        assert w.durable_flush_to(mine) >= mine
        assert w.durable_flush_to(0) >= mine
        # the open's generation of epochs, then the two adds
        with pytest.raises(ValueError, match="sequence 4 was not handed out"):
            w.durable_flush_to(4)
        assert w.durable_stats()["last_seq"] == 3


def run_child(source, *args, timeout=60):
    """Runs `source` in a child interpreter; its standard output. A child that hangs fails
    the test (subprocess.TimeoutExpired) instead of hanging the suite."""
    child = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(source), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert child.returncode == 0, child.stderr
    return child.stdout


THREADS_AT_ONCE = """
    import sys, threading, time
    from timerwheel import Token, Wheel

    w = Wheel(store_path=sys.argv[1], durability=sys.argv[2])
    w.register_handler("h", lambda token, payload: True)
    w.durable_open()
    end = time.monotonic() + 1.0

    def calls(n):
        i = 0
        while time.monotonic() < end:
            w.durable_add(n, "h", time.time() + 3600, replace=True)
            w.durable_ack([Token(n, "h", i, 1)])
            w.durable_stats()
            i += 1

    threads = [threading.Thread(target=calls, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    w.close()
    print("done")
"""


@pytest.mark.parametrize("durability", ["sync", "async"])
def test_threads_calling_durable_methods_at_once_go_on(tmp_path, durability):
    # A thread that waited for the store's lock while holding the GIL, and one that held
    # that lock and waited for the GIL to come back from its call, waited for each other.
    out = run_child(THREADS_AT_ONCE, str(tmp_path / "s.db"), durability)
    assert out.split() == ["done"]


HANDLER_ADDS = """
    import sys, threading, time
    from timerwheel import Wheel

    w = Wheel(store_path=sys.argv[1], durability="sync")
    added = threading.Event()

    def handler(token, payload):
        if token.key == 0:
            w.durable_add(1, "h", time.time() + 3600)
            added.set()
        return True

    w.register_handler("h", handler)
    w.durable_open()
    w.durable_add(0, "h", time.time())  # due at once: its handler may run before this returns
    assert added.wait(30), "the handler's durable_add did not return"
    w.close()
    print("done")
"""


def test_a_handler_makes_a_sync_change_while_its_add_commits(tmp_path):
    assert run_child(HANDLER_ADDS, str(tmp_path / "s.db")).split() == ["done"]


@pytest.mark.parametrize("durability", ["sync", "async"])
def test_an_acknowledgement_made_while_close_waits_is_kept(tmp_path, durability):
    store = str(tmp_path / "s.db")
    started = []

    def slow_true(token, payload):
        started.append(token)
        time.sleep(0.3)
        return True

    w = Wheel(store_path=store, durability=durability)
    w.register_handler("h", slow_true)
    w.durable_open()
    w.durable_add(9, "h", time.time())
    deadline = time.monotonic() + 30
    while not started and time.monotonic() < deadline:
        time.sleep(0.005)
    assert started, "the timer did not fire"
    w.close()  # waits for the handler, whose True acknowledges its fire

    fires, handler = recorder(answer=True)
    with Wheel(store_path=store, durability=durability) as again:
        again.register_handler("h", handler)
        again.durable_open()
        time.sleep(0.5)
        assert fires == [], "an acknowledged fire was delivered again"
        assert again.durable_stats()["unacked_fires"] == 0
