//! What the kernel says a thread is doing: running or waiting for a CPU, or asleep in a
//! blocking call. The executor's monitor reads it to tell a worker blocked in a callback
//! (a slow I/O call, a lock, Python's GIL: all sleep in the kernel) from one that is simply
//! busy, which more threads would not speed up.

/// The kernel's id of the calling thread (0 where there is none to read).
#[cfg(all(target_os = "linux", not(loom)))]
pub(crate) fn current_tid() -> i32 {
    extern "C" {
        fn gettid() -> i32;
    }
    // SAFETY: gettid takes no argument, touches no memory and cannot fail.
    unsafe { gettid() }
}

#[cfg(not(all(target_os = "linux", not(loom))))]
pub(crate) fn current_tid() -> i32 {
    0
}

/// Whether the thread `tid` of this process sleeps in the kernel: the state field of
/// `/proc/self/task/<tid>/stat` is `S` (interruptible: a futex, a socket, a sleep) or `D`
/// (uninterruptible: disk I/O). `R` (running or runnable, waiting for a CPU) is not, and
/// neither is a thread that cannot be read (it exited). Where there is no such file (not
/// Linux), a thread that stayed in one run long enough to be asked about counts as blocked.
#[cfg(all(target_os = "linux", not(loom)))]
pub(crate) fn sleeps_in_kernel(tid: i32) -> bool {
    let Ok(stat) = std::fs::read(format!("/proc/self/task/{tid}/stat")) else {
        return false;
    };
    state_of(&stat).is_some_and(|state| matches!(state, b'S' | b'D'))
}

#[cfg(not(all(target_os = "linux", not(loom))))]
pub(crate) fn sleeps_in_kernel(_tid: i32) -> bool {
    true
}

/// The state field of a `stat` line: the first byte after the `") "` that ends the
/// thread's name (the name itself may hold spaces and parentheses).
#[cfg(all(target_os = "linux", not(loom)))]
fn state_of(stat: &[u8]) -> Option<u8> {
    let name_end = stat.iter().rposition(|&b| b == b')')?;
    stat.get(name_end + 2).copied()
}

#[cfg(all(test, target_os = "linux", not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicI32, Ordering::SeqCst};
    use std::sync::{Arc, Mutex};
    use std::thread;
    use std::time::{Duration, Instant};

    /// Runs `body` on a thread of its own and reports what `sleeps_in_kernel` says of it
    /// after it has been at it for a while; then `release` and the flag `body` is given end
    /// it.
    fn state_while(
        body: impl FnOnce(&AtomicBool) + Send + 'static,
        release: impl FnOnce(),
    ) -> bool {
        let tid = Arc::new(AtomicI32::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (tid2, stop2) = (tid.clone(), stop.clone());
        let thread = thread::spawn(move || {
            tid2.store(current_tid(), SeqCst);
            body(&stop2);
        });
        while tid.load(SeqCst) == 0 {
            thread::yield_now();
        }
        thread::sleep(Duration::from_millis(50));
        // A spinning thread may be caught between two reads of the flag: ask a few times.
        let asleep = (0..5).all(|_| sleeps_in_kernel(tid.load(SeqCst)));
        stop.store(true, SeqCst);
        release();
        thread.join().unwrap();
        asleep
    }

    #[test]
    fn a_sleeping_thread_sleeps_in_the_kernel() {
        let sleeper = |stop: &AtomicBool| {
            while !stop.load(SeqCst) {
                thread::sleep(Duration::from_millis(200));
            }
        };
        assert!(state_while(sleeper, || ()));
    }

    #[test]
    fn a_thread_waiting_for_a_lock_sleeps_in_the_kernel() {
        // Python's GIL is a lock of this kind: a callback waiting for it waits in a futex.
        let lock = Arc::new(Mutex::new(()));
        let held = lock.lock().unwrap();
        let waiter = lock.clone();
        assert!(state_while(
            move |_| drop(waiter.lock().unwrap()),
            || drop(held)
        ));
    }

    #[test]
    fn a_spinning_thread_does_not() {
        let spinner = |stop: &AtomicBool| {
            let start = Instant::now();
            while !stop.load(SeqCst) && start.elapsed() < Duration::from_secs(60) {
                std::hint::spin_loop();
            }
        };
        assert!(!state_while(spinner, || ()));
    }

    #[test]
    fn a_thread_that_is_gone_does_not() {
        let tid = thread::spawn(current_tid).join().unwrap();
        assert!(!sleeps_in_kernel(tid));
    }

    #[test]
    fn the_state_follows_the_last_parenthesis_of_the_name() {
        assert_eq!(state_of(b"12 (a) (b) R 1 2"), Some(b'R'));
        assert_eq!(state_of(b"12 (worker) S 1 2"), Some(b'S'));
        assert_eq!(state_of(b"garbage"), None);
    }
}
