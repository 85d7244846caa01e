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

/// What the kernel says of one thread of this process, read from its files
/// (`/proc/self/task/<tid>/stat` and `syscall`), opened once and read again at each look
/// (a thread that exited reads as not asleep).
pub(crate) struct ThreadProbe {
    #[cfg(all(target_os = "linux", not(loom)))]
    stat: Option<std::fs::File>,
    #[cfg(all(target_os = "linux", not(loom)))]
    syscall: Option<std::fs::File>,
}

/// The system calls in which a thread waits for another thread of its process: a lock, a
/// condition (`futex`, `futex_waitv`), by their numbers on this architecture.
#[cfg(all(target_os = "linux", not(loom), target_arch = "x86_64"))]
const LOCK_WAITS: [u64; 2] = [202, 449];
#[cfg(all(target_os = "linux", not(loom), target_arch = "aarch64"))]
const LOCK_WAITS: [u64; 2] = [98, 449];
#[cfg(all(
    target_os = "linux",
    not(loom),
    not(any(target_arch = "x86_64", target_arch = "aarch64"))
))]
const LOCK_WAITS: [u64; 0] = [];

#[cfg(all(target_os = "linux", not(loom)))]
impl ThreadProbe {
    pub(crate) fn of(tid: i32) -> Self {
        let open = |file| std::fs::File::open(format!("/proc/self/task/{tid}/{file}")).ok();
        ThreadProbe {
            stat: open("stat"),
            syscall: open("syscall"),
        }
    }

    /// Where the thread sleeps now: `None` when it does not (it runs, or woke since the
    /// look at its state, or exited); a wait for another thread of the process (a lock or
    /// a condition: a `futex`); or any other call (I/O, a sleep, a page to read; unknown
    /// system calls, on other architectures, count as such).
    pub(crate) fn sleeps_in(&self) -> Option<Sleep> {
        let mut buf = [0u8; 128];
        let syscall = read_again(self.syscall.as_ref(), &mut buf);
        let first = syscall.split(|&b| b == b' ').next().unwrap_or_default();
        let first = std::str::from_utf8(first).ok()?.trim_end();
        // "running", or nothing read: not asleep.
        let number: i64 = first.parse().ok()?;
        let lock = u64::try_from(number).is_ok_and(|n| LOCK_WAITS.contains(&n));
        Some(if lock { Sleep::OnALock } else { Sleep::InACall })
    }

    /// Whether the thread sleeps in the kernel: the state field of `stat` is `S`
    /// (interruptible: a futex, a socket, a sleep) or `D` (uninterruptible: disk I/O). `R`
    /// (running or runnable, waiting for a CPU) is not.
    pub(crate) fn sleeps_in_kernel(&self) -> bool {
        let mut buf = [0u8; 512];
        let stat = read_again(self.stat.as_ref(), &mut buf);
        state_of(stat).is_some_and(|state| matches!(state, b'S' | b'D'))
    }
}

/// Where there are no such files (not Linux), a thread that stayed in one run long enough
/// to be asked about counts as blocked.
#[cfg(not(all(target_os = "linux", not(loom))))]
impl ThreadProbe {
    pub(crate) fn of(_tid: i32) -> Self {
        ThreadProbe {}
    }

    pub(crate) fn sleeps_in_kernel(&self) -> bool {
        true
    }

    pub(crate) fn sleeps_in(&self) -> Option<Sleep> {
        Some(Sleep::InACall)
    }
}

/// Where a sleeping thread sleeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sleep {
    /// In I/O, a sleep: any call but a wait for another thread.
    InACall,
    /// In a lock or a condition (Python's GIL too): waiting for another thread of the
    /// process, which may itself be waiting for a CPU.
    OnALock,
}

/// How long each thread of this process has wanted a CPU so far, by thread id: the time
/// it ran on one and the time it waited for one, runnable (the first two fields of its
/// `schedstat`, in nanoseconds).
#[cfg(all(target_os = "linux", not(loom)))]
pub(crate) fn cpu_demand_by_thread() -> Vec<(i32, u64)> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let mut buf = [0u8; 128];
    let demand_of = |task: std::fs::DirEntry| {
        let tid = task.file_name().to_str()?.parse().ok()?;
        let file = std::fs::File::open(task.path().join("schedstat")).ok();
        Some((tid, schedstat_demand(read_again(file.as_ref(), &mut buf))))
    };
    tasks.flatten().filter_map(demand_of).collect()
}

/// Where there is no such reading (not Linux), no thread wants a CPU.
#[cfg(not(all(target_os = "linux", not(loom))))]
pub(crate) fn cpu_demand_by_thread() -> Vec<(i32, u64)> {
    Vec::new()
}

/// The sum of the first two fields of a `schedstat` line.
#[cfg(all(target_os = "linux", not(loom)))]
fn schedstat_demand(schedstat: &[u8]) -> u64 {
    let field = |f: &[u8]| std::str::from_utf8(f).ok()?.parse::<u64>().ok();
    let fields = schedstat.split(|&b| b == b' ').take(2);
    fields.filter_map(field).sum()
}

/// The file's contents now, as far as they fit in `buf` (empty when it cannot be read).
#[cfg(all(target_os = "linux", not(loom)))]
fn read_again<'b>(file: Option<&std::fs::File>, buf: &'b mut [u8]) -> &'b [u8] {
    use std::os::unix::fs::FileExt;
    let read = file.and_then(|f| f.read_at(buf, 0).ok()).unwrap_or(0);
    &buf[..read]
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

    /// Runs `body` on a thread of its own and reports what `ask` says of its probe after it
    /// has been at it for a while; then `release` and the flag `body` is given end it.
    fn probe_while(
        body: impl FnOnce(&AtomicBool) + Send + 'static,
        release: impl FnOnce(),
        ask: impl FnOnce(&ThreadProbe) -> bool,
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
        let answer = ask(&ThreadProbe::of(tid.load(SeqCst)));
        stop.store(true, SeqCst);
        release();
        thread.join().unwrap();
        answer
    }

    /// A body that sleeps until it is told to end.
    fn sleep_until(stop: &AtomicBool) {
        while !stop.load(SeqCst) {
            thread::sleep(Duration::from_millis(200));
        }
    }

    /// What `sleeps_in_kernel` says of a thread running `body` (see [`probe_while`]).
    fn state_while(
        body: impl FnOnce(&AtomicBool) + Send + 'static,
        release: impl FnOnce(),
    ) -> bool {
        // A spinning thread may be caught between two reads of the flag: ask a few times.
        probe_while(body, release, |probe| {
            (0..5).all(|_| probe.sleeps_in_kernel())
        })
    }

    #[test]
    fn a_sleeping_thread_sleeps_in_the_kernel() {
        assert!(state_while(sleep_until, || ()));
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
    fn a_thread_waiting_for_a_lock_waits_on_a_lock_a_sleeping_one_does_not() {
        let lock = Arc::new(Mutex::new(()));
        let held = lock.lock().unwrap();
        let waiter = lock.clone();
        assert!(waits_while(
            move |_| drop(waiter.lock().unwrap()),
            || drop(held)
        ));
        assert!(!waits_while(sleep_until, || ()));
    }

    /// Whether a thread running `body` sleeps on a lock (see [`probe_while`]).
    fn waits_while(
        body: impl FnOnce(&AtomicBool) + Send + 'static,
        release: impl FnOnce(),
    ) -> bool {
        probe_while(body, release, |probe| {
            probe.sleeps_in() == Some(Sleep::OnALock)
        })
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
        // The files are opened while the thread lives and read after it exited.
        let (tid_sent, tid) = std::sync::mpsc::channel();
        let (exit, exit_now) = std::sync::mpsc::channel::<()>();
        let thread = thread::spawn(move || {
            tid_sent.send(current_tid()).unwrap();
            let _ = exit_now.recv();
        });
        let gone = ThreadProbe::of(tid.recv().unwrap());
        drop(exit);
        thread.join().unwrap();
        assert!(!gone.sleeps_in_kernel());
    }

    /// Each of three spinners ran or waited to run throughout (the readings took a moment
    /// of their own). Time the machine itself is not given (a virtual machine's stolen
    /// time, a throttled container's) is neither run nor wait, so the measurement is tried
    /// three times; counting run time alone fails every time, 3 spinners on 2 CPUs running
    /// at most 2/3 of it.
    #[test]
    fn spinning_threads_want_a_cpu_all_the_time() {
        let spinners = 3;
        let results: Vec<_> = (0..3)
            .map(|_| demand_of_spinners(spinners))
            .take_while(|&(wanted, elapsed)| {
                !(spinners * elapsed * 8 / 10..=spinners * (elapsed + 5_000_000)).contains(&wanted)
            })
            .collect();
        assert!(
            results.len() < 3,
            "{spinners} spinners wanted a CPU (ns, in ns): {results:?}"
        );
    }

    /// The CPU time `spinners` spinning threads wanted over 100 ms, and that time, in ns.
    fn demand_of_spinners(spinners: u64) -> (u64, u64) {
        let stop = AtomicBool::new(false);
        let started = std::sync::Barrier::new(spinners as usize + 1);
        thread::scope(|scope| {
            let tids: Vec<_> = (0..spinners)
                .map(|_| {
                    scope.spawn(|| {
                        started.wait();
                        while !stop.load(SeqCst) {
                            std::hint::spin_loop();
                        }
                        current_tid()
                    })
                })
                .collect();
            started.wait();
            let before = cpu_demand_by_thread();
            let start = Instant::now();
            thread::sleep(Duration::from_millis(100));
            let after = cpu_demand_by_thread();
            let elapsed = start.elapsed().as_nanos() as u64;
            stop.store(true, SeqCst);
            let tids: Vec<i32> = tids.into_iter().map(|t| t.join().unwrap()).collect();
            let of = |readings: &[(i32, u64)]| -> u64 {
                readings
                    .iter()
                    .filter(|(tid, _)| tids.contains(tid))
                    .map(|r| r.1)
                    .sum()
            };
            (of(&after) - of(&before), elapsed)
        })
    }

    #[test]
    fn a_schedstat_line_gives_run_and_wait_time() {
        assert_eq!(schedstat_demand(b"1500 250 7\n"), 1750);
        assert_eq!(schedstat_demand(b"garbage"), 0);
    }

    #[test]
    fn the_state_follows_the_last_parenthesis_of_the_name() {
        assert_eq!(state_of(b"12 (a) (b) R 1 2"), Some(b'R'));
        assert_eq!(state_of(b"12 (worker) S 1 2"), Some(b'S'));
        assert_eq!(state_of(b"garbage"), None);
    }
}
