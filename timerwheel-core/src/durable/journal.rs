//! The journal: changes queued in sequence order and committed to the sink by a writer
//! thread in batches (group commit). Async mode commits a batch when it is full or its
//! first event has waited `delay`; sync mode commits at once, and what queues during a
//! commit goes into the next one.

use std::collections::VecDeque;
use std::mem;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::event::{Change, Event};
use super::sink::Sink;
use super::DurableError;

/// When a change is durable, relative to the call that made it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The call returns once the change is queued; a batch is committed when it holds
    /// `batch` events or its first event has waited `delay`. A crash loses at most the
    /// changes of the last `delay` (and the commit under way).
    Async {
        /// Most events per commit (at least 1).
        batch: usize,
        /// Longest wait of an event for its commit.
        delay: Duration,
    },
    /// The call returns once the batch holding its change is committed.
    Sync {
        /// Most events per commit (at least 1).
        batch: usize,
    },
}

impl Default for Mode {
    fn default() -> Self {
        Mode::Async {
            batch: 1000,
            delay: Duration::from_millis(10),
        }
    }
}

impl Mode {
    fn batch(self) -> usize {
        match self {
            Mode::Async { batch, .. } | Mode::Sync { batch } => batch.max(1),
        }
    }
}

#[derive(Default)]
struct Queue {
    /// Queued, oldest first; a deque, so that taking a batch from the front of a long queue
    /// moves nothing else (a vector moved every event behind it, under the lock).
    events: VecDeque<Event>,
    first_queued: Option<Instant>,
    last_seq: u64,
    durable_seq: u64,
    flush_to: u64,
    failures: u64,
    commits: u64,
    unreported: Option<String>,
    closing: bool,
}

struct Shared {
    queue: Mutex<Queue>,
    wake_writer: Condvar,
    committed: Condvar,
    mode: Mode,
}

/// Why [`Journal::flush_to`] did not make its sequence durable.
#[derive(Debug, PartialEq, Eq)]
pub enum FlushRefused {
    /// `seq` is past `last`, the last sequence handed out: nothing waited.
    NotHandedOut { seq: u64, last: u64 },
    /// A commit failed (its message, reported once).
    Store(String),
}

/// How far the journal got ([`Journal::progress`]).
pub struct Progress {
    pub last_seq: u64,
    pub durable_seq: u64,
    pub commits: u64,
    pub failures: u64,
}

/// The queue and its writer thread.
pub struct Journal {
    shared: Arc<Shared>,
    writer: Mutex<Option<JoinHandle<()>>>,
}

impl Journal {
    /// Starts the writer over `sink`, whose snapshot covers `seq`.
    pub fn start(sink: Box<dyn Sink>, seq: u64, mode: Mode) -> Journal {
        let queue = Queue {
            last_seq: seq,
            durable_seq: seq,
            ..Queue::default()
        };
        let shared = Arc::new(Shared {
            queue: Mutex::new(queue),
            wake_writer: Condvar::new(),
            committed: Condvar::new(),
            mode,
        });
        let writer_shared = Arc::clone(&shared);
        let writer = thread::Builder::new()
            .name("timerwheel-journal".into())
            .spawn(move || write_loop(&writer_shared, sink))
            .expect("the journal's writer thread starts");
        Journal {
            shared,
            writer: Mutex::new(Some(writer)),
        }
    }

    /// A commit failure not reported yet, taken (reported once).
    pub fn take_failure(&self) -> Option<String> {
        self.lock().unreported.take()
    }

    /// The sequence the next change will get.
    pub fn next_seq(&self) -> u64 {
        self.lock().last_seq + 1
    }

    /// Queues `change` with the next sequence number and returns it. Callers queue under
    /// their own lock, so the sequence follows the order of their changes.
    pub fn push(&self, change: Change) -> u64 {
        self.push_all(std::iter::once(change))
            .expect("one change queued")
    }

    /// Queues `changes` together (one commit takes them all unless they overflow a
    /// batch) and returns the last sequence, `None` if there were none. An acknowledgement
    /// of many tokens is one group: queued one by one, a sync writer woken by the first
    /// would commit it in pieces, one fsync each.
    pub fn push_all(&self, changes: impl IntoIterator<Item = Change>) -> Option<u64> {
        let mut queue = self.lock();
        let before = queue.events.len();
        for change in changes {
            queue.last_seq += 1;
            let seq = queue.last_seq;
            queue.events.push_back(Event { seq, change });
        }
        let queued = queue.events.len();
        if queued == before {
            return None;
        }
        if queue.first_queued.is_none() {
            queue.first_queued = Some(Instant::now());
        }
        let full = queued >= self.shared.mode.batch();
        if full || matches!(self.shared.mode, Mode::Sync { .. }) || before == 0 {
            self.shared.wake_writer.notify_one();
        }
        Some(queue.last_seq)
    }

    /// In sync mode, waits until `seq` is durable; `Err` with the message of a commit that
    /// failed meanwhile. Async mode returns at once unless the writer is behind.
    pub fn settle(&self, seq: u64) -> Result<(), String> {
        match self.shared.mode {
            Mode::Sync { .. } => self.wait_durable(seq),
            Mode::Async { .. } => {
                self.wait_backlog(seq);
                Ok(())
            }
        }
    }

    /// The back-pressure: waits while a full batch is queued ahead of the event `seq`, so
    /// that what a crash loses stays within the delay and about two commits (a queue that
    /// grew without bound lost changes far older than the delay). It counts only the events
    /// ahead of `seq`: counting the whole queue, a caller waited as long as others (the
    /// timers' fires) kept it full. While commits fail it waits for one attempt at most
    /// (the failure is reported by the next call).
    pub fn wait_backlog(&self, seq: u64) {
        self.wait_backlog_of(|_| seq);
    }

    /// [`Self::wait_backlog`] for the change that will be queued next, under one lock.
    pub fn wait_backlog_of_next(&self) {
        self.wait_backlog_of(|queue| queue.last_seq + 1);
    }

    /// [`Self::wait_backlog`] for the sequence `seq_of` the queue as the wait begins.
    fn wait_backlog_of(&self, seq_of: impl FnOnce(&Queue) -> u64) {
        let batch = self.shared.mode.batch() as u64;
        let mut queue = self.lock();
        let seq = seq_of(&queue);
        let failures = queue.failures;
        while queue
            .events
            .front()
            .is_some_and(|first| seq >= first.seq.saturating_add(batch))
            && queue.failures == failures
            && !queue.closing
        {
            queue = self
                .shared
                .committed
                .wait(queue)
                .unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Commits everything queued; returns the durable sequence, or the message of a commit
    /// that failed (reported here if it was not yet).
    pub fn flush(&self) -> Result<u64, String> {
        self.flush_upto(None).map_err(|refused| match refused {
            FlushRefused::Store(message) => message,
            FlushRefused::NotHandedOut { .. } => unreachable!("a flush of all is never ahead"),
        })
    }

    /// Commits the changes up to `seq` and returns the durable sequence (`seq` or more)
    /// without waiting for the changes queued after it; `seq` must have been handed out.
    pub fn flush_to(&self, seq: u64) -> Result<u64, FlushRefused> {
        self.flush_upto(Some(seq))
    }

    /// [`flush_to`](Self::flush_to) `seq`, or everything queued when `None`.
    fn flush_upto(&self, seq: Option<u64>) -> Result<u64, FlushRefused> {
        let target = {
            let mut queue = self.lock();
            let target = seq.unwrap_or(queue.last_seq);
            if target > queue.last_seq {
                let last = queue.last_seq;
                return Err(FlushRefused::NotHandedOut { seq: target, last });
            }
            if let Some(message) = queue.unreported.take() {
                return Err(FlushRefused::Store(message));
            }
            if target > queue.durable_seq {
                queue.flush_to = queue.flush_to.max(target);
                self.shared.wake_writer.notify_one();
            }
            target
        };
        self.wait_durable(target).map_err(FlushRefused::Store)?;
        Ok(self.lock().durable_seq)
    }

    /// The last sequence queued, the durable one, and how many commits succeeded and failed.
    /// Commits the start of the epochs' `generation`, before any of them is handed out.
    pub fn begin_generation(&self, generation: u64) -> Result<(), DurableError> {
        self.push(Change::Generation(generation));
        self.flush().map(drop).map_err(DurableError::Store)
    }

    pub fn progress(&self) -> Progress {
        let queue = self.lock();
        Progress {
            last_seq: queue.last_seq,
            durable_seq: queue.durable_seq,
            commits: queue.commits,
            failures: queue.failures,
        }
    }

    /// Commits what is queued (one attempt) and stops the writer.
    pub fn close(&self) {
        self.lock().closing = true;
        self.shared.wake_writer.notify_one();
        let writer = self.writer.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(writer) = writer {
            let _ = writer.join();
        }
    }

    fn wait_durable(&self, seq: u64) -> Result<(), String> {
        let mut queue = self.lock();
        let failures = queue.failures;
        while queue.durable_seq < seq {
            if queue.failures != failures {
                let message = queue.unreported.take();
                return Err(message.unwrap_or_else(|| "a commit of the store failed".into()));
            }
            queue = self
                .shared
                .committed
                .wait(queue)
                .unwrap_or_else(|p| p.into_inner());
        }
        Ok(())
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.shared.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        self.close();
    }
}

fn write_loop(shared: &Shared, mut sink: Box<dyn Sink>) {
    let mut retry: Vec<Event> = Vec::new();
    loop {
        let (batch, closing) = {
            let queue = next_batch(shared, !retry.is_empty());
            let (mut queue, most) = match queue {
                Some(due) => due,
                None => return,
            };
            let closing = queue.closing;
            let take = most.saturating_sub(retry.len());
            let mut batch = mem::take(&mut retry);
            if queue.events.len() <= take {
                batch.extend(queue.events.drain(..));
                queue.first_queued = None;
            } else {
                batch.extend(queue.events.drain(..take));
                // A batch cut short by a flush leaves the rest due when it was.
                if most == shared.mode.batch() {
                    queue.first_queued = Some(Instant::now());
                }
            }
            // The queue has room again: the callers waiting for it queue the next batch
            // while this one commits.
            shared.committed.notify_all();
            (batch, closing)
        };
        let result = sink.commit(&batch);
        let mut queue = shared.queue.lock().unwrap_or_else(|p| p.into_inner());
        match result {
            Ok(()) => {
                queue.durable_seq = batch.last().map_or(queue.durable_seq, |e| e.seq);
                queue.commits += 1;
            }
            Err(message) => {
                queue.failures += 1;
                queue.unreported = Some(message);
                if closing {
                    shared.committed.notify_all();
                    return;
                }
                retry = batch;
            }
        }
        shared.committed.notify_all();
        if !retry.is_empty() {
            drop(queue);
            thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Waits until a batch is due; returns the queue and how many events to take at most, or
/// `None` when closing with nothing left. An async batch due only to a flush stops at the
/// flush's sequence: a flush to a sequence waits for no change queued after it.
fn next_batch(shared: &Shared, retrying: bool) -> Option<(MutexGuard<'_, Queue>, usize)> {
    let mut queue = shared.queue.lock().unwrap_or_else(|p| p.into_inner());
    while queue.events.is_empty() && !retrying {
        if queue.closing {
            return None;
        }
        queue = shared
            .wake_writer
            .wait(queue)
            .unwrap_or_else(|p| p.into_inner());
    }
    if let Mode::Async { batch, delay } = shared.mode {
        loop {
            let due = queue.first_queued.map_or(Instant::now(), |t| t + delay);
            let now = Instant::now();
            if queue.events.len() >= batch || queue.closing || now >= due {
                break;
            }
            if let Some(flushed) = events_to_flush(&queue) {
                return Some((queue, flushed.min(batch.max(1))));
            }
            queue = shared
                .wake_writer
                .wait_timeout(queue, due - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
    Some((queue, shared.mode.batch()))
}

/// How many queued events a flush waits for, `None` without a flush waiting (one may wait
/// for the retried batch alone: 0).
fn events_to_flush(queue: &Queue) -> Option<usize> {
    if queue.flush_to <= queue.durable_seq {
        return None;
    }
    let first = queue.events.front().map_or(u64::MAX, |e| e.seq);
    let waited = queue.flush_to.saturating_add(1).saturating_sub(first);
    Some(usize::try_from(waited).unwrap_or(usize::MAX))
}
