"""Calls that type-check under mypy --strict (tests/test_typing.py)."""

import asyncio
from datetime import timedelta
from typing import Optional

import timerwheel
from timerwheel import Fleet, FleetToken, Stats, Timer, Token, Wheel
from timerwheel.asyncio import LoopTimer, LoopWheel


def charge(session: int, amount: float = 0.0) -> None: ...


async def hang_up(session: int) -> None: ...


def use(wheel: Wheel) -> int:
    t: Timer = wheel.call_later(0.5, charge, 1)
    wheel.call_later(timedelta(seconds=1), charge, 1, amount=2.5)
    wheel.call_at(1e9, charge, session=3)
    wheel.call_every(1.0, charge, 1, fixed_delay=True, first=timedelta(0))
    wheel.call_every(timedelta(minutes=1), charge, 1, 2.0)
    timerwheel.call_later(0.1, charge, 2)
    t.reset(timedelta(milliseconds=10))
    cancelled: list[bool] = wheel.cancel_many([t, t])
    when: Optional[float] = t.when()
    stats: Stats = wheel.stats()
    return stats["pending"] + stats["late_p99_us"] + int(when or 0) + len(cancelled)


async def main() -> None:
    async with LoopWheel(tick=timedelta(milliseconds=1)) as lw:
        idle: LoopTimer = lw.call_later(30, hang_up, 7)
        idle.reset(timedelta(seconds=30))
        lw.call_every(1.0, charge, 7)
        value: str = await lw.sleep(0.01, "done")
        print(value, idle.when())


def on_charge(token: Token, payload: bytes) -> bool:
    return token.occurrence_ms > 0 and payload != b""


def durable(path: str) -> int:
    with Wheel(store_path=path, durability="sync", missed_points="each") as w:
        w.register_handler("charge", on_charge)
        w.durable_open()
        w.durable_add(42, "charge", w.now() + 1, payload=b"42", period=timedelta(seconds=1))
        w.durable_reset(42, "charge", w.now() + 2)
        acked: int = w.durable_ack([Token(42, "charge", 1000, 1)])
        w.durable_delete(42, "charge")
        return acked + w.durable_flush() + w.durable_stats()["timers"]


def on_fleet_charge(token: FleetToken, payload: bytes) -> bool:
    return token.epoch > 0 and token.shard >= 0 and token.version > 0 and payload != b""


def fleet(conninfo: str, now: float) -> int:
    node = Fleet(
        ttl=2.0, window=10.0, poll=0.1, batch=100, listen=False, buffer=100, missed_points="coalesce"
    )
    node.register_handler("charge", on_fleet_charge)
    with node.join(conninfo, "node-a") as joined:
        status: str = joined.add(42, "charge", now + 1, payload=b"42", period=1.0)
        joined.reset(42, "charge", now + 2)
        joined.delete(42, "charge")
        acked: int = joined.ack([FleetToken(42, "charge", 1000, 1, 3, 7)])
        joined.flush()
        return acked + joined.pending + len(status)


with Wheel(tick=timedelta(milliseconds=1)) as w:
    use(w)
asyncio.run(main())
