"""The exceptions timerwheel raises besides ValueError and TypeError for bad arguments."""


class TimerwheelError(Exception):
    """Base class of the timerwheel errors."""


class TimerwheelFullError(TimerwheelError):
    """The wheel already holds ``max_timers`` pending timers: the timer was not added."""


class TimerwheelClosedError(TimerwheelError, RuntimeError):
    """The wheel is closed: it accepts no timers any more."""


class TimerwheelForkedError(TimerwheelError, RuntimeError):
    """The wheel was created before this process was forked from its parent (``os.fork()``),
    whose threads it needs: create a new wheel in the child. ``close()`` still works, and
    the module-level functions use a new default wheel in the child by themselves."""


class TimerwheelBusyError(TimerwheelError, RuntimeError):
    """The call would wait for the calling thread itself (``close()`` or
    ``Timer.cancel_sync()`` from one of the wheel's own callbacks), or would close the
    shared default wheel, which lives as long as the process."""


class TimerwheelGroupClosedError(TimerwheelError, RuntimeError):
    """The group is closed: it takes no more timers (it ends once its last timer ended)."""


class DurableExistsError(TimerwheelError):
    """``durable_add`` of a (key, name) that has a durable timer, without ``replace=True``."""


class DurableNoHandlerError(TimerwheelError, LookupError):
    """No handler is registered under the name: at ``durable_add``, or at ``durable_open``
    for a stored timer (the store is left untouched; register it and open again)."""


class DurableStoreError(TimerwheelError, OSError):
    """The durable store refused or failed; the message says why (the path and, e.g.,
    "locked by another opener", "not a timerwheel store", a failed commit)."""


class FleetUnreachableError(TimerwheelError, ConnectionError):
    """PostgreSQL did not answer a fleet node: ``Fleet.join`` could not connect, or
    ``Fleet.flush`` left changes in the node's buffer (``Fleet.pending`` counts them). The
    message never holds the connection string."""


class FleetFencedError(TimerwheelError):
    """``Fleet.ack`` of a token whose shard moved past its epoch (another node took it, or
    the lease expired): refused, and delivered again by the shard's new owner."""


class FleetBufferFullError(TimerwheelFullError):
    """PostgreSQL did not answer and the fleet node's buffer of unwritten changes holds its
    bound (``Fleet(buffer=...)``): the change was not taken."""
