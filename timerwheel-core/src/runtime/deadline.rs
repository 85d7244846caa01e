//! When a pending timer is due, on the wall clock.

use std::time::SystemTime;

use super::restart::Instant;
use super::{Runtime, Task, TimerId};

impl<T: Task> Runtime<T> {
    /// The next deadline of a pending timer on the runtime's clock ([`now`](Self::now)):
    /// when a one-shot fires, when a periodic timer runs next. `None` when it is not
    /// waiting in the wheel: fired, cancelled, unknown, due and waiting for a worker, or a
    /// periodic timer whose callback is running.
    pub fn deadline(&self, id: TimerId) -> Option<SystemTime> {
        let (shard, key) = self.inner.shard_of(id).ok()?;
        let deadline = shard.lock().deadline(key)?;
        let clock = &self.inner.clock;
        Some(Instant::read(clock).wall_at(clock.exact_ns(deadline)))
    }
}
