//! The adaptive executor: the run queue of due timers and the workers that drain it.
//!
//! Dispatch. Every due run not yet started waits in one shared queue, in deadline order
//! (runs of equal deadlines in the order they were queued), and a worker takes
//! one run at a time, right before it starts it. So a run that is due can always be taken by
//! any idle worker or by a worker being added; none waits behind a busy worker's private
//! batch. The lock this costs per run is uncontended most of the time (the tick thread
//! pushes a whole tick's runs at once); what batching is still worth, taking an interpreter
//! lock once for many callbacks, happens around the takes ([`Task::enter_batch`]).
//!
//! Grow. The tick thread is the monitor ([`Executor::grow`]). The pool grows when due runs
//! back up because workers are blocked, not because they are busy: more threads than CPUs
//! do not clear a backlog of work that needs the CPU any sooner. When the oldest waiting
//! run has waited [`GROW_AFTER`] and no worker is idle, the monitor counts the workers
//! blocked in a run: in the same run (a callback, or the wait for an interpreter lock
//! before a batch; not the runtime's own locks) for at least [`BLOCKED_AFTER`], and asleep
//! in the kernel ([`ThreadProbe::sleeps_in_kernel`]: a blocking call, a lock, Python's
//! GIL), not running or waiting for a CPU, at every look for [`STILL_ASLEEP`] (2 ms) of
//! that run. The last
//! tells a blocked worker from a busy one that waits a moment for a short lock whose holder
//! lost its CPU: with two CPUs shared by the tick thread, the workers and the program's own
//! threads, such waits come by the thousand a second, and counting them grew the pool to
//! `max_workers` under load that only needed the CPU. It adds workers until as many are
//! running as there are CPUs, bounded by the runs waiting and by `max_workers`. A worker
//! blocked in a call (I/O, a sleep) is replaced as such; one that waits on a lock or a
//! condition (a `futex`: the program's locks, Python's GIL) only onto CPUs that the
//! process's threads do not take ([`Executor::cpus_taken`]: the CPUs' worth of time its
//! threads ran or waited to run over the last [`DEMAND_EVERY`] or so). Its lock's holder, a
//! thread of the program, may be waiting for a CPU: then the waiter looks blocked however
//! long it sleeps, and while the program's threads take every CPU, another worker would
//! only wait for one too. So a
//! backlog behind a worker blocked in a callback gets a new worker [`GROW_AFTER`] (1 ms)
//! after it formed, or about `BLOCKED_AFTER + STILL_ASLEEP` after the callback began if
//! that is later; while workers keep blocking the pool grows by the number of CPUs every 3
//! ms or so (the look [`GROWING_LOOK`] after a start, then every `GROW_AFTER`: 1 to 16
//! workers on 2 CPUs in about 25 ms); and a backlog of callbacks that need the CPU keeps no
//! more workers than CPUs. While runs wait and the pool can grow, the tick thread looks
//! again every `GROW_AFTER` (`GROWING_LOOK` after it started some); when it cannot grow (at
//! `max_workers`, or nothing waits) it does not wake for the executor at all.
//!
//! Shrink. A worker that found the queue empty for `worker_keepalive` retires, down to
//! `min_workers`. A worker only waits when the queue is empty, so none retires while runs
//! wait.
//!
//! [`Task::enter_batch`]: super::Task::enter_batch

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::clock::Deadline;
use super::run_queue::RunQueue;
use super::sync::atomic::{AtomicU64, Ordering::Relaxed};
use super::sync::thread::{self, JoinHandle};
use super::sync::time::Instant;
use super::sync::{Condvar, Mutex, MutexGuard};
use super::thread_state::{cpu_demand_by_thread, current_tid, Sleep, ThreadProbe};
use super::TimerId;

/// How long the oldest waiting run may wait, with every worker busy, before the pool grows.
pub(crate) const GROW_AFTER: Duration = Duration::from_millis(1);

/// How long a worker stays in one run before the monitor asks the kernel whether it is
/// blocked.
pub(crate) const BLOCKED_AFTER: Duration = Duration::from_micros(250);

/// How soon the monitor looks again after it started workers: they have taken runs by
/// then, and may be blocked in them.
const GROWING_LOOK: Duration = Duration::from_micros(250);

/// How long a worker stays asleep in the kernel in one run, from the look that first found
/// it so to one that finds it so again, before it counts as blocked. A callback that takes a
/// short lock whose holder lost its CPU sleeps too, for about a scheduler slice: more
/// workers would only make more of them wait; a blocking call stays asleep.
pub(crate) const STILL_ASLEEP: Duration = Duration::from_millis(2);

/// A worker thread as the monitor sees it: its kernel id, since when it is in its
/// current run (clock nanoseconds; 0 when between runs or idle), and the run in which the
/// monitor last found it asleep and since when.
pub(crate) struct WorkerThread {
    probe: ThreadProbe,
    in_run_since_ns: AtomicU64,
    /// The `in_run_since_ns` of the run in which looks found it asleep (0: none).
    asleep_in_run: AtomicU64,
    /// The first of those looks (clock nanoseconds).
    asleep_seen_ns: AtomicU64,
}

impl WorkerThread {
    fn new(tid: i32) -> Self {
        WorkerThread {
            probe: ThreadProbe::of(tid),
            in_run_since_ns: AtomicU64::new(0),
            asleep_in_run: AtomicU64::new(0),
            asleep_seen_ns: AtomicU64::new(0),
        }
    }

    /// The worker starts a run, or a batch of them, at `now_ns`.
    pub(crate) fn enter_run(&self, now_ns: u64) {
        self.in_run_since_ns.store(now_ns.max(1), Relaxed);
    }

    /// The worker left its runs (it waits for work, or exits).
    pub(crate) fn leave_runs(&self) {
        self.in_run_since_ns.store(0, Relaxed);
    }

    /// The monitor's look at `now_ns`: whether the worker has been in one run since
    /// `BLOCKED_AFTER` before, and every look in that run since `STILL_ASLEEP` before or
    /// earlier found it asleep in the kernel; and if so, where it sleeps now. Only the
    /// monitor calls it.
    fn blocked(&self, now_ns: u64) -> Option<Sleep> {
        let since = self.in_run_since_ns.load(Relaxed);
        let long = since != 0 && now_ns.saturating_sub(since) >= BLOCKED_AFTER.as_nanos() as u64;
        if !long || !self.probe.sleeps_in_kernel() {
            self.asleep_in_run.store(0, Relaxed);
            return None;
        }
        if self.asleep_in_run.swap(since, Relaxed) != since {
            self.asleep_seen_ns.store(now_ns, Relaxed);
        }
        let asleep_for = now_ns.saturating_sub(self.asleep_seen_ns.load(Relaxed));
        if asleep_for < STILL_ASLEEP.as_nanos() as u64 {
            return None;
        }
        // Read after its state: one that woke meanwhile is not blocked.
        self.probe.sleeps_in()
    }
}

/// How many workers a look found blocked, by where.
#[derive(Default)]
struct BlockedWorkers {
    in_calls: usize,
    on_locks: usize,
}

/// How often, at most, the monitor reads the process's CPU demand while runs wait.
const DEMAND_EVERY: Duration = Duration::from_millis(10);

/// A reading of what the process's threads ran and waited to run so far, and how many
/// CPUs they took on average since the reading before it (none for the first).
struct CpuDemand {
    at: Instant,
    by_thread: HashMap<i32, u64>,
    cpus_taken: Option<usize>,
}

impl CpuDemand {
    fn read_after(last: Option<CpuDemand>) -> CpuDemand {
        let at = Instant::now();
        let by_thread: HashMap<i32, u64> = cpu_demand_by_thread().into_iter().collect();
        let cpus_taken = last.map(|last| {
            let wanted_ns: u64 = by_thread
                .iter()
                .map(|(tid, ns)| ns.saturating_sub(last.by_thread.get(tid).copied().unwrap_or(0)))
                .sum();
            let since_ns = (last.at.elapsed().as_nanos() as u64).max(1);
            ((wanted_ns + since_ns / 2) / since_ns) as usize
        });
        CpuDemand {
            at,
            by_thread,
            cpus_taken,
        }
    }
}

#[derive(Default)]
struct Queue {
    runs: RunQueue,
    /// Worker threads counted, running or starting.
    workers: usize,
    /// Workers waiting for work.
    idle: usize,
    peak: usize,
    spawned: usize,
    retired: usize,
    /// Threads inside `Runtime::poll` (manual mode).
    pollers: usize,
    /// Whether the tick thread runs.
    ticker: bool,
    closed: bool,
    /// Runs once the executor is closed and no thread of it is left (see
    /// [`Executor::when_unused`]).
    on_unused: Option<Box<dyn FnOnce() + Send>>,
}

impl Queue {
    /// The hook to run now, if the executor is closed and no thread of it is left.
    fn unused_hook(&mut self) -> Option<Box<dyn FnOnce() + Send>> {
        let in_use = self.workers > 0 || self.pollers > 0 || self.ticker;
        self.on_unused.take_if(|_| self.closed && !in_use)
    }
}

/// Worker counts for the stats.
pub(crate) struct WorkerCounts {
    pub(crate) workers: usize,
    pub(crate) peak: usize,
    pub(crate) spawned: usize,
    pub(crate) retired: usize,
    pub(crate) queued: usize,
}

/// The monitor's verdict: how many workers to start now (counted already), and when to
/// look again (`None`: nothing to watch).
pub(crate) struct Growth {
    pub(crate) start: usize,
    pub(crate) look_again: Option<Duration>,
}

impl Growth {
    const NONE: Growth = Growth {
        start: 0,
        look_again: None,
    };

    fn look_again_in(wait: Duration) -> Growth {
        Growth {
            start: 0,
            look_again: Some(wait),
        }
    }
}

pub(crate) struct Executor {
    queue: Mutex<Queue>,
    work: Condvar,
    /// Signalled when the last poller leaves a closed executor.
    pollers_done: Condvar,
    handles: Mutex<Vec<JoinHandle<()>>>,
    /// The worker threads alive, for the monitor.
    threads: Mutex<Vec<Arc<WorkerThread>>>,
    /// How many workers may run at once: the CPUs.
    cpus: usize,
    /// How many CPUs the process's threads take ([`Executor::cpus_taken`]; a stand-in in
    /// tests).
    cpus_taken: fn(&Executor) -> usize,
    /// The monitor's last reading of the process's CPU demand.
    demand: Mutex<Option<CpuDemand>>,
    min_workers: usize,
    max_workers: usize,
    keepalive: Duration,
}

impl Executor {
    pub(crate) fn new(min_workers: usize, max_workers: usize, keepalive: Duration) -> Self {
        Executor {
            queue: Mutex::new(Queue::default()),
            work: Condvar::new(),
            pollers_done: Condvar::new(),
            handles: Mutex::new(Vec::new()),
            threads: Mutex::new(Vec::new()),
            cpus: super::config::cpus(),
            cpus_taken: Executor::cpus_taken,
            demand: Mutex::new(None),
            min_workers: min_workers.min(max_workers),
            max_workers,
            keepalive,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reserves the initial workers; the caller spawns that many.
    pub(crate) fn reserve_initial(&self) -> usize {
        let mut queue = self.lock();
        queue.workers = self.min_workers;
        queue.peak = self.min_workers;
        self.min_workers
    }

    /// Keeps the thread handle so shutdown can join it; forgets the finished ones.
    pub(crate) fn adopt(&self, handle: JoinHandle<()>) {
        let _always_ok = self.adopting(|| Ok(handle));
    }

    /// Starts a thread with `spawn` and keeps its handle, both under the handles' lock: a
    /// [`close`](Self::close) that takes the handles finds every thread started before
    /// it, which may already run a callback; one started after finds the executor closed
    /// and runs nothing.
    pub(crate) fn adopting(
        &self,
        spawn: impl FnOnce() -> std::io::Result<JoinHandle<()>>,
    ) -> std::io::Result<()> {
        let mut handles = self.handles.lock().unwrap_or_else(|p| p.into_inner());
        let handle = spawn()?;
        handles.retain(|h| !h.is_finished());
        handles.push(handle);
        Ok(())
    }

    /// Queues due runs and wakes as many idle workers as there are runs. A run goes behind
    /// every queued run of its deadline or earlier (see `run_queue.rs`).
    pub(crate) fn push(&self, ids: &mut Vec<(Deadline, TimerId)>) {
        if ids.is_empty() {
            return;
        }
        let since = Instant::now();
        let mut queue = self.lock();
        if queue.closed {
            ids.clear();
            return;
        }
        let count = ids.len();
        for (deadline, id) in ids.drain(..) {
            queue.runs.push(id, deadline, since);
        }
        let idle = queue.idle;
        drop(queue);
        if idle == 0 {
            // Every worker is busy: the monitor decides whether the pool grows.
        } else if count >= idle {
            self.work.notify_all();
        } else {
            (0..count).for_each(|_| self.work.notify_one());
        }
    }

    /// Takes the next due run to start it, with the deadline it was queued for; `None`
    /// when the queue is empty or closed.
    pub(crate) fn take(&self) -> Option<(TimerId, Deadline)> {
        let mut queue = self.lock();
        if queue.closed {
            return None;
        }
        queue.runs.pop().map(|run| (run.id, run.deadline))
    }

    /// The monitor (see the module doc): starts workers when runs back up because workers
    /// are blocked. `now_ns` is the clock the workers stamp their runs with.
    pub(crate) fn grow(&self, now_ns: u64) -> Growth {
        let queue = self.lock();
        let can_grow = queue.workers < self.max_workers && !queue.closed;
        let Some(oldest) = queue.runs.oldest_since().filter(|_| can_grow) else {
            return Growth::NONE;
        };
        let waited = oldest.elapsed();
        // A pool of none starts one at once: nobody else would take the run.
        if queue.workers > 0 && (waited < GROW_AFTER || queue.idle > 0) {
            let wait = GROW_AFTER.saturating_sub(waited).max(GROW_AFTER / 4);
            return Growth::look_again_in(wait);
        }
        drop(queue);
        // Read before the lock (a file per thread), and at each look so that it is fresh
        // when workers block.
        let cpus_taken = (self.cpus_taken)(self);
        let blocked = self.blocked_by_where(now_ns);
        let free_cpus = self.cpus.saturating_sub(cpus_taken);
        let mut queue = self.lock();
        let busy = queue.workers - queue.idle;
        let running = |blocked: usize| busy - blocked.min(busy);
        // Workers blocked in a call are replaced; those waiting on a lock only onto free
        // CPUs.
        let for_calls = self.cpus.saturating_sub(running(blocked.in_calls));
        let all_blocked = blocked.in_calls + blocked.on_locks;
        let for_all = self
            .cpus
            .saturating_sub(running(all_blocked))
            .min(free_cpus);
        let start = self
            .cpus
            .saturating_sub(busy)
            .max(for_calls)
            .max(for_all)
            .max(usize::from(queue.workers == 0))
            .min(queue.runs.len())
            .min(self.max_workers.saturating_sub(queue.workers));
        queue.workers += start;
        queue.spawned += start;
        queue.peak = queue.peak.max(queue.workers);
        let more = queue.workers < self.max_workers && !queue.runs.is_empty();
        let look = if start > 0 { GROWING_LOOK } else { GROW_AFTER };
        Growth {
            start,
            look_again: more.then_some(look),
        }
    }

    /// How many CPUs the process's threads took, on average, between the monitor's last
    /// two readings of what they ran and waited to run ([`cpu_demand_by_thread`]), read
    /// again once [`DEMAND_EVERY`] has passed (a second reading [`GROW_AFTER`] after the
    /// first). Until there are two readings, all of them: the next look knows.
    fn cpus_taken(&self) -> usize {
        let mut demand = self.demand.lock().unwrap_or_else(|p| p.into_inner());
        let stale = demand.as_ref().is_none_or(|d| {
            let age = d.at.elapsed();
            age >= DEMAND_EVERY || (d.cpus_taken.is_none() && age >= GROW_AFTER)
        });
        if stale {
            *demand = Some(CpuDemand::read_after(demand.take()));
        }
        demand
            .as_ref()
            .and_then(|d| d.cpus_taken)
            .unwrap_or(self.cpus)
    }

    /// How many workers are blocked in a run (see [`WorkerThread`]), by where.
    fn blocked_by_where(&self, now_ns: u64) -> BlockedWorkers {
        let threads = self.threads.lock().unwrap_or_else(|p| p.into_inner());
        let mut blocked = BlockedWorkers::default();
        for thread in threads.iter() {
            match thread.blocked(now_ns) {
                Some(Sleep::InACall) => blocked.in_calls += 1,
                Some(Sleep::OnALock) => blocked.on_locks += 1,
                None => {}
            }
        }
        blocked
    }

    /// How many workers are blocked in a run, wherever.
    #[cfg(test)]
    fn blocked_workers(&self, now_ns: u64) -> usize {
        let blocked = self.blocked_by_where(now_ns);
        blocked.in_calls + blocked.on_locks
    }

    /// The calling thread becomes a worker the monitor watches; [`leave`](Self::leave) when
    /// it exits.
    pub(crate) fn enlist(&self) -> Arc<WorkerThread> {
        let thread = Arc::new(WorkerThread::new(current_tid()));
        let mut threads = self.threads.lock().unwrap_or_else(|p| p.into_inner());
        threads.push(Arc::clone(&thread));
        thread
    }

    pub(crate) fn leave(&self, thread: &Arc<WorkerThread>) {
        let mut threads = self.threads.lock().unwrap_or_else(|p| p.into_inner());
        threads.retain(|t| !Arc::ptr_eq(t, thread));
    }

    /// A worker's wait for work. True when runs are queued (take them with
    /// [`take`](Self::take)); false when the worker must exit: the executor closed, or it
    /// stayed idle for the keepalive with more than `min_workers` alive.
    pub(crate) fn wait_for_work(&self) -> bool {
        let mut queue = self.lock();
        let idle_since = Instant::now();
        loop {
            if queue.closed {
                queue.workers -= 1;
                Self::run_unused_hook(queue);
                return false;
            }
            if !queue.runs.is_empty() {
                return true;
            }
            let idle_for = idle_since.elapsed();
            let may_retire = queue.workers > self.min_workers;
            if idle_for >= self.keepalive && may_retire {
                queue.workers -= 1;
                queue.retired += 1;
                return false;
            }
            queue.idle += 1;
            queue = if may_retire {
                let wait = self.keepalive.saturating_sub(idle_for);
                self.work
                    .wait_timeout(queue, wait.max(Duration::from_millis(1)))
                    .unwrap_or_else(|p| p.into_inner())
                    .0
            } else {
                // One of the kept workers: it sleeps until there is work (or a close).
                self.work.wait(queue).unwrap_or_else(|p| p.into_inner())
            };
            queue.idle -= 1;
        }
    }

    /// Takes the executor's locks (the queue, the thread handles, the workers' states)
    /// until the result is dropped: for fork().
    pub(crate) fn lock_all(&self) -> impl Sized + '_ {
        let queue = self.lock();
        (
            queue,
            self.handles.lock().unwrap_or_else(|p| p.into_inner()),
            self.threads.lock().unwrap_or_else(|p| p.into_inner()),
        )
    }

    /// A counted worker could not be started (the OS refused a thread).
    pub(crate) fn worker_failed(&self) {
        let mut queue = self.lock();
        queue.workers -= 1;
        Self::run_unused_hook(queue);
    }

    /// The tick thread starts; [`ticker_exited`](Self::ticker_exited) when it ends.
    pub(crate) fn ticker_started(&self) {
        self.lock().ticker = true;
    }

    pub(crate) fn ticker_exited(&self) {
        let mut queue = self.lock();
        queue.ticker = false;
        Self::run_unused_hook(queue);
    }

    /// Runs `hook` once the executor is closed and none of its threads (tick thread,
    /// workers, pollers) is left: at once if that is so already. Shutdown from one of the
    /// runtime's own threads uses it to free what those threads may still touch.
    pub(crate) fn when_unused(&self, hook: Box<dyn FnOnce() + Send>) {
        let mut queue = self.lock();
        queue.on_unused = Some(hook);
        Self::run_unused_hook(queue);
    }

    fn run_unused_hook(mut queue: MutexGuard<'_, Queue>) {
        let hook = queue.unused_hook();
        drop(queue);
        if let Some(hook) = hook {
            hook();
        }
    }

    /// Tells workers and pollers to start no more callbacks, without waiting for them; the
    /// queued runs are forgotten (their timers are discarded with the shards).
    pub(crate) fn stop(&self) {
        let mut queue = self.lock();
        queue.closed = true;
        queue.runs.clear();
        drop(queue);
        self.work.notify_all();
    }

    /// A thread begins a [`Hold`](super::Hold): counted as a poller even once the executor
    /// is closed, so that the unused hook (which may free the caller's handle) waits for
    /// its [`end_poll`](Self::end_poll) whenever the hold began before the hook ran.
    pub(crate) fn begin_hold(&self) {
        self.lock().pollers += 1;
    }

    /// A thread enters `poll` (manual mode); false once the executor is closed.
    pub(crate) fn begin_poll(&self) -> bool {
        let mut queue = self.lock();
        queue.pollers += usize::from(!queue.closed);
        !queue.closed
    }

    pub(crate) fn end_poll(&self) {
        let mut queue = self.lock();
        queue.pollers -= 1;
        if queue.pollers == 0 && queue.closed {
            self.pollers_done.notify_all();
        }
        Self::run_unused_hook(queue);
    }

    /// Stops the workers and pollers: none starts another callback; waits for the running
    /// ones.
    pub(crate) fn close(&self) {
        self.stop();
        let handles = std::mem::take(&mut *self.handles.lock().unwrap_or_else(|p| p.into_inner()));
        for handle in handles {
            let _ = handle.join();
        }
        let mut queue = self.lock();
        while queue.pollers > 0 {
            queue = self
                .pollers_done
                .wait(queue)
                .unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Whether the calling thread is one of the executor's (the tick thread or a worker),
    /// which [`close`](Self::close) would wait for.
    pub(crate) fn runs_here(&self) -> bool {
        let me = thread::current().id();
        let handles = self.handles.lock().unwrap_or_else(|p| p.into_inner());
        handles.iter().any(|h| h.thread().id() == me)
    }

    pub(crate) fn counts(&self) -> WorkerCounts {
        let queue = self.lock();
        WorkerCounts {
            workers: queue.workers,
            peak: queue.peak,
            spawned: queue.spawned,
            retired: queue.retired,
            queued: queue.runs.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(count: u64) -> Vec<(Deadline, TimerId)> {
        let id = |n| (Deadline::at_tick(n), TimerId::from_u64(n).unwrap());
        (1..=count).map(id).collect()
    }

    /// An executor with `workers` counted, all busy, and `queued` runs waiting.
    /// Its monitor finds no CPU taken, but for [`busy_beside`].
    fn busy(workers: usize, max: usize, queued: u64) -> Executor {
        busy_beside(|_| 0, workers, max, queued)
    }

    /// [`busy`], where the process's threads take `cpus_taken` CPUs.
    fn busy_beside(
        cpus_taken: fn(&Executor) -> usize,
        workers: usize,
        max: usize,
        queued: u64,
    ) -> Executor {
        let mut executor = Executor::new(workers, max, Duration::from_secs(1));
        executor.cpus_taken = cpus_taken;
        executor.reserve_initial();
        executor.push(&mut ids(queued));
        executor
    }

    fn wait_grow_after() {
        std::thread::sleep(GROW_AFTER + Duration::from_millis(1));
    }

    #[test]
    fn every_queued_run_counts_until_taken() {
        let executor = busy(1, 4, 40);
        assert_eq!(executor.counts().queued, 40);
        assert_eq!(executor.take().map(|(id, _)| id), TimerId::from_u64(1));
        assert_eq!(executor.counts().queued, 39);
    }

    #[test]
    fn runs_wait_in_deadline_order_ties_in_the_order_queued() {
        let executor = busy(1, 4, 0);
        let run = |tick, n| (Deadline::at_tick(tick), TimerId::from_u64(n).unwrap());
        executor.push(&mut vec![run(5, 1), run(7, 2)]);
        executor.push(&mut vec![run(3, 3), run(5, 4), run(9, 5)]);
        let taken: Vec<_> = std::iter::from_fn(|| executor.take())
            .map(|(id, _)| id.as_u64())
            .collect();
        assert_eq!(taken, [3, 1, 4, 2, 5]);
    }

    /// A clock reading `BLOCKED_AFTER` past the runs the blocked workers stamp.
    const LATER_NS: u64 = 1 + 2 * BLOCKED_AFTER.as_nanos() as u64;
    const STILL_ASLEEP_NS: u64 = STILL_ASLEEP.as_nanos() as u64;

    /// Runs `check` with a clock reading while `count` threads, enlisted as workers of
    /// `executor`, are blocked in a run: they wait for a lock, asleep in the kernel as a
    /// callback waiting for Python's GIL does, and the monitor's looks found them so for
    /// `STILL_ASLEEP` by that reading.
    fn with_blocked_workers(executor: &Executor, count: usize, check: impl FnOnce(u64)) {
        let lock = std::sync::Mutex::new(());
        let held = lock.lock().unwrap();
        std::thread::scope(|scope| {
            for _ in 0..count {
                scope.spawn(|| {
                    let me = executor.enlist();
                    me.enter_run(1);
                    drop(lock.lock().unwrap());
                    me.leave_runs();
                    executor.leave(&me);
                });
            }
            let start = Instant::now();
            let mut now = LATER_NS;
            while executor.blocked_workers(now) < count {
                assert!(start.elapsed() < Duration::from_secs(30), "never blocked");
                std::thread::sleep(Duration::from_millis(1));
                now += STILL_ASLEEP_NS;
            }
            check(now);
            drop(held);
        });
    }

    #[test]
    fn the_pool_waits_grow_after() {
        let executor = busy(1, 16, 0);
        with_blocked_workers(&executor, 1, |now| {
            executor.push(&mut ids(64));
            let early = executor.grow(now);
            assert_eq!(early.start, 0, "nothing has waited GROW_AFTER yet");
            assert!(early.look_again.is_some_and(|d| d <= GROW_AFTER));
            wait_grow_after();
            assert!(executor.grow(now).start > 0);
        });
    }

    #[test]
    fn workers_busy_on_the_cpu_grow_the_pool_no_further_than_the_cpus() {
        let executor = busy(1, 64, 1000);
        wait_grow_after();
        for _ in 0..10 {
            let growth = executor.grow(LATER_NS);
            assert!(growth.start == 0 || executor.counts().workers <= executor.cpus);
        }
        assert_eq!(executor.counts().workers, executor.cpus);
    }

    #[test]
    fn blocked_workers_are_joined_by_as_many_running_as_cpus_up_to_max_workers() {
        let executor = busy(4, 16, 64);
        with_blocked_workers(&executor, 4, |now| {
            wait_grow_after();
            let growth = executor.grow(now);
            assert_eq!(growth.start, executor.cpus.min(12));
            assert_eq!(executor.grow(now).start, 0, "the new ones run");
        });
        let full = busy(4, 5, 64);
        with_blocked_workers(&full, 4, |now| {
            wait_grow_after();
            assert_eq!(full.grow(now).start, 1, "max_workers bounds the pool");
        });
    }

    #[test]
    fn blocked_workers_are_joined_only_on_cpus_no_thread_of_the_process_takes() {
        // Workers asleep on a lock whose holder, another thread of the program, waits for a
        // CPU: the CPUs are taken, and more workers would only wait for them too.
        let taken = busy_beside(|_| 64, 4, 16, 64);
        with_blocked_workers(&taken, 4, |now| {
            wait_grow_after();
            assert_eq!(taken.grow(now).start, 0);
        });
        let one_free = busy_beside(|_| config_cpus() - 1, 4, 16, 64);
        with_blocked_workers(&one_free, 4, |now| {
            wait_grow_after();
            assert_eq!(one_free.grow(now).start, 1);
        });
    }

    #[test]
    fn workers_blocked_in_a_call_are_replaced_even_when_the_cpus_are_taken() {
        // Asleep in I/O or a sleep, they hold no lock another worker waits for: whatever
        // else runs, their runs need other workers.
        let executor = busy_beside(|_| 64, 4, 16, 64);
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    let me = executor.enlist();
                    me.enter_run(1);
                    while !stop.load(Relaxed) {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    me.leave_runs();
                    executor.leave(&me);
                });
            }
            let start = Instant::now();
            let mut now = LATER_NS;
            let mut in_calls = 0;
            while in_calls < 4 && start.elapsed() < Duration::from_secs(30) {
                std::thread::sleep(Duration::from_millis(1));
                now += STILL_ASLEEP_NS;
                in_calls = executor.blocked_by_where(now).in_calls;
            }
            wait_grow_after();
            let started = executor.grow(now).start;
            stop.store(true, Relaxed);
            assert_eq!(in_calls, 4, "never all blocked in a call");
            assert_eq!(started, executor.cpus.min(12));
        });
    }

    #[test]
    fn fewer_busy_workers_than_cpus_grow_to_the_cpus_whatever_else_runs() {
        let executor = busy_beside(|_| 64, 1, 64, 1000);
        wait_grow_after();
        assert_eq!(executor.grow(LATER_NS).start, executor.cpus - 1);
    }

    fn config_cpus() -> usize {
        super::super::config::cpus()
    }

    #[test]
    fn a_worker_briefly_asleep_in_a_run_is_not_blocked() {
        let executor = busy(1, 16, 64);
        with_blocked_workers(&executor, 1, |_| {
            assert_eq!(executor.blocked_workers(2), 0, "in its run for 1 ns only");
        });
    }

    #[test]
    fn a_worker_is_blocked_once_looks_found_it_asleep_in_one_run_for_still_asleep() {
        let executor = busy(1, 16, 64);
        with_blocked_workers(&executor, 1, |now| {
            let threads = executor.threads.lock().unwrap();
            let worker = &threads[0];
            // A lock's waiter asleep for a moment, then in its next run asleep again: the
            // looks start over with each run.
            let run = now + 1;
            worker.enter_run(run);
            let first = run + LATER_NS;
            assert!(
                worker.blocked(first).is_none(),
                "the first look that found it asleep"
            );
            assert!(worker.blocked(first + STILL_ASLEEP_NS - 1).is_none());
            worker.enter_run(first + STILL_ASLEEP_NS - 1);
            assert!(
                worker.blocked(first + STILL_ASLEEP_NS + LATER_NS).is_none(),
                "another run"
            );
            let again = first + STILL_ASLEEP_NS + LATER_NS;
            assert!(
                worker.blocked(again + STILL_ASLEEP_NS) == Some(Sleep::OnALock),
                "asleep on the lock in one run throughout"
            );
        });
    }

    #[test]
    fn growth_is_bounded_by_the_runs_waiting() {
        let executor = busy(4, 16, 2);
        with_blocked_workers(&executor, 4, |now| {
            wait_grow_after();
            assert_eq!(executor.grow(now).start, executor.cpus.min(2));
        });
    }

    #[test]
    fn no_wake_ups_when_the_pool_cannot_grow() {
        let full = busy(4, 4, 10);
        wait_grow_after();
        let growth = full.grow(LATER_NS);
        assert_eq!((growth.start, growth.look_again), (0, None));
        let empty = busy(1, 4, 0);
        let growth = empty.grow(LATER_NS);
        assert_eq!((growth.start, growth.look_again), (0, None));
    }

    #[test]
    fn an_empty_pool_starts_a_worker_at_once() {
        let executor = busy(0, 4, 1);
        assert_eq!(executor.grow(LATER_NS).start, 1);
    }

    #[test]
    fn a_closed_executor_hands_out_nothing_and_grows_no_more() {
        let executor = busy(1, 4, 3);
        executor.stop();
        assert_eq!(executor.take(), None);
        assert_eq!(executor.counts().queued, 0);
        wait_grow_after();
        assert_eq!(executor.grow(LATER_NS).start, 0);
    }
}
