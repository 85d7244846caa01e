//! A shard's lock, and the cancels that do without it.
//!
//! A shard's state changes under its lock, with one exception. A timer that is *plain* (a
//! one-shot outside any group whose task's drop does nothing) is opened to shared cancels
//! when it is added. A cancel of it then marks its node cancelled with one compare-and-swap
//! and logs the node's index in the shard's [`CancelLog`], without taking the lock
//! ([`Wheel::cancel_shared`](crate::wheel::Wheel::cancel_shared)). Its place under
//! `max_timers` is free at once; its task, which drops nothing, stays in the node. A
//! one-shot of a type that releases without the lock ([`Task::RELEASE_WITHOUT_LOCK`]: a
//! Python callable) is opened too: its cancel goes this way when the task's drop would do
//! nothing on the cancelling thread, then, inside, lets go of what the task holds; the
//! emptied task stays in the node.
//!
//! The lock is one word ([`ShardLock`]): a bit for the holder, a bit for threads asleep
//! waiting for it, and a count of the threads inside for a shared cancel. A shared cancel
//! enters only while no one holds the lock; a thread that takes the lock waits for those
//! inside to leave. So a shared cancel never overlaps a change made under the lock: the
//! wheel's nodes neither move (a pool that grows) nor change state (a timer that expires)
//! under it. The holder then removes the timers the log names before anything else
//! ([`ShardState::take_shared_cancels`](super::shard::ShardState)), so every change made
//! under the lock sees a wheel without cancelled timers in it.
//!
//! Exactly one of a shared cancel and the timer's expiry wins: the expiry happens under the
//! lock, after the removal. A cancel that finds the lock held, the log full, or the timer
//! not open to it (it expired, runs, or is not plain) takes the lock instead.
//!
//! Holding the lock costs what a mutex costs: one compare-and-swap to take it and one to
//! let it go, with no poisoning (nothing panics under it). Threads that find it held spin a
//! little, then sleep on the word (a futex on Linux; elsewhere they yield).

use super::sync::atomic::{AtomicU32, AtomicUsize, Ordering::*};

/// Set while a thread holds the lock.
const LOCKED: u32 = 1;
/// Set while threads may sleep waiting for the lock: its holder wakes one when it lets go.
const SLEEPERS: u32 = 2;
/// One thread inside for a shared cancel; the bits from here up count them.
const SHARER: u32 = 4;

/// Spins of a thread waiting for the lock (or for sharers to leave) before it sleeps (or
/// yields the processor to a thread that may have been preempted). None under loom, which
/// explores a spin loop as endless branches.
const SPINS: u32 = 100;

/// The lock of a shard, with room for shared cancels (see the module's doc).
pub(crate) struct ShardLock {
    word: AtomicU32,
    /// Moved on at each [`notify_all`](Self::notify_all), for [`wait`](Self::wait).
    signal: AtomicU32,
    /// Where threads sleep until a word changes.
    sleep: Sleep,
}

impl ShardLock {
    pub(crate) fn new() -> Self {
        ShardLock {
            word: AtomicU32::new(0),
            signal: AtomicU32::new(0),
            sleep: Sleep::default(),
        }
    }

    /// Takes the lock, and waits for the threads inside for a shared cancel to leave.
    #[inline]
    pub(crate) fn lock(&self) {
        if self
            .word
            .compare_exchange_weak(0, LOCKED, Acquire, Relaxed)
            .is_err()
        {
            self.lock_contended();
        }
    }

    #[cold]
    fn lock_contended(&self) {
        let (mut spins, mut slept) = (0, false);
        loop {
            let word = self.word.load(Relaxed);
            if word & LOCKED == 0 {
                // A thread that slept takes the lock marked as slept on: others may still
                // sleep, and its unlock must wake one of them.
                let taken = word | LOCKED | if slept { SLEEPERS } else { 0 };
                if self
                    .word
                    .compare_exchange_weak(word, taken, Acquire, Relaxed)
                    .is_ok()
                {
                    return self.wait_for_sharers();
                }
                continue;
            }
            if spins < SPINS && cfg!(not(loom)) {
                spins += 1;
                std::hint::spin_loop();
                continue;
            }
            if word & SLEEPERS == 0
                && self
                    .word
                    .compare_exchange_weak(word, word | SLEEPERS, Relaxed, Relaxed)
                    .is_err()
            {
                continue;
            }
            self.sleep.until_changed(&self.word, word | SLEEPERS);
            slept = true;
        }
    }

    /// Waits until no thread is inside for a shared cancel; the lock is held (none enters).
    /// They leave within a few instructions unless preempted: it spins, then yields.
    fn wait_for_sharers(&self) {
        let mut spins = 0;
        loop {
            // Acquire: sees what the last of them wrote before it left.
            let word = self.word.load(Acquire);
            if word < SHARER {
                return;
            }
            if cfg!(loom) {
                self.sleep.until_changed(&self.word, word);
            } else if spins < SPINS {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }

    /// Lets the lock go, and wakes a thread asleep waiting for it.
    #[inline]
    pub(crate) fn unlock(&self) {
        if self
            .word
            .compare_exchange(LOCKED, 0, Release, Relaxed)
            .is_err()
        {
            self.unlock_contended();
        }
    }

    #[cold]
    fn unlock_contended(&self) {
        // Sharers that came and went while it was held may have moved the count.
        let word = self.word.fetch_and(!(LOCKED | SLEEPERS), Release);
        if word & SLEEPERS != 0 {
            self.sleep.wake(&self.word, 1);
        }
    }

    /// Enters for a shared cancel, unless the lock is held; a caller let in must
    /// [`leave`](Self::leave).
    #[inline]
    pub(crate) fn enter(&self) -> bool {
        // Acquire: sees what the lock's last holder wrote.
        if self.word.fetch_add(SHARER, Acquire) & LOCKED == 0 {
            return true;
        }
        self.word.fetch_sub(SHARER, Relaxed);
        self.wake_the_holder();
        false
    }

    /// Leaves after a shared cancel.
    #[inline]
    pub(crate) fn leave(&self) {
        // Release: the lock's next holder sees what the caller wrote inside.
        self.word.fetch_sub(SHARER, Release);
        self.wake_the_holder();
    }

    /// Under loom, where a holder waiting for sharers to leave sleeps rather than spins: a
    /// sharer wakes it when it leaves. (Elsewhere the holder spins: nothing to do.)
    #[inline]
    fn wake_the_holder(&self) {
        #[cfg(loom)]
        self.sleep.wake(&self.word, i32::MAX);
    }

    /// With the lock held: lets it go until [`notify_all`](Self::notify_all) is called (or
    /// spuriously), then takes it again. The caller checks its condition again.
    pub(crate) fn wait(&self) {
        let seen = self.signal.load(Relaxed);
        self.unlock();
        self.sleep.until_changed(&self.signal, seen);
        self.lock();
    }

    /// With the lock held: wakes every thread in [`wait`](Self::wait).
    pub(crate) fn notify_all(&self) {
        self.signal.fetch_add(1, Relaxed);
        self.sleep.wake(&self.signal, i32::MAX);
    }
}

/// Sleeping until a word changes: Linux's futex; elsewhere a yield (the callers loop);
/// under loom, a condition variable that every wake signals.
#[derive(Default)]
struct Sleep {
    #[cfg(loom)]
    parked: (loom::sync::Mutex<()>, loom::sync::Condvar),
}

impl Sleep {
    /// Sleeps while `word` holds `expected` (or returns at once, or spuriously: the caller
    /// checks its condition again).
    fn until_changed(&self, word: &AtomicU32, expected: u32) {
        #[cfg(all(target_os = "linux", not(loom)))]
        futex(word, libc::FUTEX_WAIT, expected);
        #[cfg(not(any(target_os = "linux", loom)))]
        {
            let _ = (word, expected);
            std::thread::yield_now();
        }
        #[cfg(loom)]
        {
            let (lock, changed) = &self.parked;
            let guard = lock.lock().unwrap();
            if word.load(SeqCst) == expected {
                drop(changed.wait(guard).unwrap());
            }
        }
    }

    /// Wakes up to `count` threads asleep on `word` (all, under loom).
    fn wake(&self, word: &AtomicU32, count: i32) {
        #[cfg(all(target_os = "linux", not(loom)))]
        futex(word, libc::FUTEX_WAKE, count as u32);
        #[cfg(not(all(target_os = "linux", not(loom))))]
        let _ = (word, count);
        #[cfg(loom)]
        {
            let (lock, changed) = &self.parked;
            drop(lock.lock().unwrap());
            changed.notify_all();
        }
    }
}

/// A futex call on `word`, private to the process: `FUTEX_WAIT` sleeps while the word holds
/// `value` (no timeout); `FUTEX_WAKE` wakes up to `value` threads asleep on it. Its result
/// (woken, EAGAIN, EINTR) needs no handling: every caller checks its condition again.
#[cfg(all(target_os = "linux", not(loom)))]
fn futex(word: &AtomicU32, op: libc::c_int, value: u32) {
    // SAFETY: the address is a live AtomicU32's; FUTEX_WAIT only reads it, FUTEX_WAKE
    // touches no memory, and the timeout argument (read by FUTEX_WAIT only) is NULL.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op | libc::FUTEX_PRIVATE_FLAG,
            value,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

/// Node indices of timers cancelled through the gate, which the lock's next holder removes.
/// A cancel reserves its slot before it tries, and writes the index, or `EMPTY` when it did
/// not cancel, before it leaves. When the log is full, cancels take the lock (whose holder
/// empties it).
pub(crate) struct CancelLog {
    /// Boxed, so that the log's header stays on the lock's cache line.
    slots: Box<[AtomicUsize; LOG_SLOTS]>,
    /// Slots reserved since the log was last emptied (may run past `LOG_SLOTS`).
    reserved: AtomicUsize,
}

/// Shared cancels between two holders of the lock, at most. The lock's holder removes them
/// together, so the cache misses of their neighbours overlap.
pub(crate) const LOG_SLOTS: usize = 64;

/// A reserved slot whose cancel did not happen.
const EMPTY: usize = usize::MAX;

impl CancelLog {
    pub(crate) fn new() -> Self {
        CancelLog {
            slots: Box::new(std::array::from_fn(|_| AtomicUsize::new(EMPTY))),
            reserved: AtomicUsize::new(0),
        }
    }

    /// A slot of the log for the caller alone, inside for a shared cancel; `None` when the
    /// log is full.
    #[inline]
    pub(crate) fn reserve(&self) -> Option<Slot<'_>> {
        let at = self.reserved.fetch_add(1, Relaxed);
        self.slots.get(at).map(Slot)
    }

    /// Whether a slot was reserved since the log was emptied.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.reserved.load(Relaxed) == 0
    }

    /// Empties the log, for the lock's holder: the indices it holds, in the order logged.
    pub(crate) fn take(&self) -> impl Iterator<Item = u32> + '_ {
        let reserved = self.reserved.swap(0, Relaxed).min(LOG_SLOTS);
        self.slots[..reserved]
            .iter()
            .map(|slot| slot.load(Relaxed))
            .filter(|&index| index != EMPTY)
            .map(|index| index as u32)
    }
}

/// One reserved slot of a [`CancelLog`]: written once, before its owner leaves.
pub(crate) struct Slot<'a>(&'a AtomicUsize);

impl Slot<'_> {
    /// Logs node `index` as cancelled, or the slot as unused.
    #[inline]
    pub(crate) fn write(self, cancelled: Option<u32>) {
        self.0
            .store(cancelled.map_or(EMPTY, |index| index as usize), Relaxed);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    use std::thread;
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_held_lock_lets_no_sharer_in_until_it_is_let_go() {
        let lock = ShardLock::new();
        assert!(lock.enter());
        lock.leave();
        lock.lock();
        assert!(!lock.enter(), "held");
        lock.unlock();
        assert!(lock.enter());
        lock.leave();
    }

    #[test]
    fn taking_the_lock_waits_for_the_sharers_inside() {
        let (lock, left) = (ShardLock::new(), AtomicBool::new(false));
        assert!(lock.enter());
        thread::scope(|s| {
            s.spawn(|| {
                thread::sleep(Duration::from_millis(50));
                left.store(true, SeqCst);
                lock.leave();
            });
            lock.lock();
            assert!(left.load(SeqCst), "taken while a sharer was inside");
            lock.unlock();
        });
    }

    /// Threads that sleep waiting for the lock are all woken in turn; the count they keep
    /// under it is exact (no two held it at once).
    #[test]
    fn many_threads_take_turns_and_none_sleeps_for_good() {
        struct Counted(ShardLock, std::cell::UnsafeCell<u64>);
        // SAFETY: the cell is only touched with the lock held.
        unsafe impl Sync for Counted {}
        let counted = Arc::new(Counted(ShardLock::new(), std::cell::UnsafeCell::new(0)));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let counted = Arc::clone(&counted);
                thread::spawn(move || {
                    for i in 0..20_000 {
                        counted.0.lock();
                        // SAFETY: the lock is held.
                        unsafe { *counted.1.get() += 1 };
                        if i % 1000 == 0 {
                            thread::sleep(Duration::from_micros(100)); // others go to sleep
                        }
                        counted.0.unlock();
                        if counted.0.enter() {
                            counted.0.leave();
                        }
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        counted.0.lock();
        // SAFETY: the lock is held.
        assert_eq!(unsafe { *counted.1.get() }, 8 * 20_000);
        counted.0.unlock();
    }

    #[test]
    fn a_waiter_is_woken_by_notify_all() {
        let (lock, ready) = (ShardLock::new(), AtomicBool::new(false));
        thread::scope(|s| {
            s.spawn(|| {
                thread::sleep(Duration::from_millis(50));
                lock.lock();
                ready.store(true, Relaxed);
                lock.notify_all();
                lock.unlock();
            });
            lock.lock();
            while !ready.load(Relaxed) {
                lock.wait();
            }
            lock.unlock();
        });
    }

    #[test]
    fn the_log_gives_back_what_was_logged_and_no_more_than_it_holds() {
        let log = CancelLog::new();
        assert!(log.is_empty());
        log.reserve().unwrap().write(Some(7));
        log.reserve().unwrap().write(None);
        log.reserve().unwrap().write(Some(3));
        assert_eq!(log.take().collect::<Vec<_>>(), [7, 3]);
        assert!(log.is_empty());
        for i in 0..LOG_SLOTS as u32 {
            log.reserve().unwrap().write(Some(i));
        }
        assert!(log.reserve().is_none(), "full");
        assert_eq!(log.take().count(), LOG_SLOTS);
        assert!(log.reserve().is_some(), "emptied");
    }
}
