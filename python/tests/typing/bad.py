"""Calls that mypy --strict must reject, one per line marked "error" (tests/test_typing.py)."""

from timerwheel import Fleet, Token, Wheel
from timerwheel.asyncio import LoopWheel


def charge(session: int, amount: float = 0.0) -> None: ...


def use(wheel: Wheel, lw: LoopWheel) -> None:
    wheel.call_later(0.5, charge, "one")  # error: an argument of the wrong type
    wheel.call_later(0.5, charge)  # error: an argument missing
    wheel.call_later(0.5, charge, 1, amont=2.0)  # error: a keyword the callback lacks
    wheel.call_at(1e9, charge, 1, 2.0, 3)  # error: too many arguments
    wheel.call_every(1.0, charge, "one")  # error: periodic, wrong positional type
    wheel.call_later("soon", charge, 1)  # error: a delay that is not seconds
    wheel.stats()["pendng"]  # error: a stats key that does not exist
    lw.call_later(1.0, charge, "one")  # error: the loop wheel's too
    wheel.register_handler("charge", charge)  # error: a handler takes (Token, bytes)
    wheel.durable_add(1, "charge", 1e9, payload="text")  # error: a payload is bytes
    wheel.durable_ack([1, 2])  # error: tokens, not ints


def use_fleet(fleet: Fleet, token: Token) -> None:
    fleet.register_handler("charge", charge)  # error: a handler takes (FleetToken, bytes)
    fleet.add(1, "charge", 1e9, payload="text")  # error: a payload is bytes
    fleet.ack([token])  # error: fleet tokens, not a wheel's
    written: bool = fleet.add(1, "charge", 1e9)  # error: "written" or "buffered"
    Fleet(missed_points="latest")  # error: "each" or "coalesce"
