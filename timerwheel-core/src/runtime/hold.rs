//! A runtime held for a run of calls on one thread (a batch). A shutdown waits for the
//! holds, so from a thread that holds the runtime it would wait for itself: the thread's
//! holds are recorded (`callback.rs`) for the shutdown to see.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use super::callback::{hold_begins, hold_ends};
use super::runtime_state::RuntimeState;
use super::{Error, Task, TimerId};

/// How many timers ahead of the one at hand a batch prefetches: enough for a cache miss to
/// be over by the time its call comes.
const PREFETCH_AHEAD: usize = 8;

/// The places in a batch of `len` whose records are prefetched before the call on place
/// `at`: every place once over the batch, [`PREFETCH_AHEAD`] places before its call.
fn prefetched_before(at: usize, len: usize) -> std::ops::Range<usize> {
    let first = if at == 0 { 0 } else { at + PREFETCH_AHEAD };
    first.min(len)..len.min(at + PREFETCH_AHEAD + 1)
}

/// A runtime held for a run of calls made on one thread, as a poll holds it: a drop run by
/// one of them, or a callback on another thread, may shut the runtime down without
/// waiting and let its owner free the [`Runtime`](super::Runtime) handle
/// ([`Runtime::shutdown_nowait_then`](super::Runtime::shutdown_nowait_then)); the owner's
/// release then waits for the hold to end (a hold begun after that shutdown as well, while
/// the release has not run), and the calls still to come answer `Shutdown` through the
/// hold.
///
/// A [`shutdown`](super::Runtime::shutdown) waits for the holds on other threads; on the
/// thread that holds the runtime it is `Busy`, and dropping the `Runtime` there shuts it
/// down without waiting. A hold stays on the thread that began it (it is not `Send`).
pub struct Hold<T: Task> {
    inner: Arc<RuntimeState<T>>,
    /// Not `Send`: the thread's record of its holds is let go on the thread that made it.
    on_this_thread: PhantomData<*const ()>,
}

impl<T: Task> Hold<T> {
    /// Holds the runtime on the calling thread until the hold is dropped.
    pub(crate) fn begin(inner: Arc<RuntimeState<T>>) -> Self {
        inner.executor.begin_hold();
        hold_begins(inner.id());
        Hold {
            inner,
            on_this_thread: PhantomData,
        }
    }

    /// [`Runtime::cancel`](super::Runtime::cancel).
    pub fn cancel(&self, id: TimerId) -> Result<(), Error> {
        self.inner.cancel(id)
    }

    /// [`Runtime::reset`](super::Runtime::reset).
    pub fn reset(&self, id: TimerId, delay: Duration) -> Result<(), Error> {
        self.inner.reset(id, delay)
    }

    /// Before the call on timer `at` of a batch of `len`, starts loading into the cache the
    /// records of the timers a few places further (at the first, of those up to there),
    /// so that the batch's cache misses overlap; `id_at(i)` is timer `i`'s id, if it is
    /// one. Does nothing else, whatever the ids are.
    #[inline]
    pub fn prefetch_ahead(&self, at: usize, len: usize, id_at: impl Fn(usize) -> Option<TimerId>) {
        for ahead in prefetched_before(at, len) {
            if let Some(id) = id_at(ahead) {
                self.inner.prefetch(id);
            }
        }
    }

    /// Whether the runtime still takes calls: `Shutdown` once it was shut down (by a drop
    /// or a callback during the hold too), `Forked` in a fork() child.
    pub fn check_open(&self) -> Result<(), Error> {
        self.inner.check_open()
    }
}

impl<T: Task> Drop for Hold<T> {
    fn drop(&mut self) {
        hold_ends(self.inner.id());
        self.inner.executor.end_poll();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_batch_prefetches_every_place_once_and_ahead_of_its_call() {
        for len in 0..3 * PREFETCH_AHEAD {
            let mut seen = vec![0; len];
            for at in 0..len {
                for place in prefetched_before(at, len) {
                    seen[place] += 1;
                    assert!(
                        place >= at,
                        "place {place} prefetched after its call at {at}"
                    );
                }
                assert_eq!(
                    seen[at], 1,
                    "place {at} of {len} not prefetched before its call"
                );
            }
            assert!(seen.iter().all(|&count| count == 1), "{len}: {seen:?}");
        }
    }
}
