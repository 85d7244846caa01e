"""A session with an idle timeout that activity pushes back, and a periodic charge.

    pip install ./python && python examples/python/hello.py
"""
import threading
import time

from timerwheel import Wheel

charges = 0
closed = threading.Event()


def charge():
    global charges
    charges += 1  # periodic runs of one timer never overlap


with Wheel(tick=0.001, max_workers=4) as wheel:
    idle = wheel.call_later(0.1, closed.set)      # close after 100 ms of silence
    ticker = wheel.call_every(0.02, charge)       # charge every 20 ms (fixed rate)

    for _ in range(5):                            # activity pushes the timeout back
        time.sleep(0.05)
        idle.reset(0.1)
    closed.wait(10)                               # silence: the timeout fires
    ticker.cancel()                               # True: no further charge starts
    stats = wheel.stats()
# leaving the block waits for running callbacks and discards what is still pending

print(f"session closed after {charges} charges; timers added {stats['added']}, "
      f"late p99 {stats['late_p99_us']} us")
raise SystemExit(0 if closed.is_set() and charges > 0 else 1)
