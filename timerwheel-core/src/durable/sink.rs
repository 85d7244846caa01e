//! Where the journal goes: a [`Sink`] commits batches of events and gives back the snapshot
//! they built. [`MemorySink`] keeps it in memory (tests, and a model of the contract).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::event::{Event, Snapshot};

/// A store of durable timers. `commit` makes a batch durable, all of it or none of it, and
/// skips the events it holds already (replay is idempotent); `load` gives the snapshot of
/// everything committed.
pub trait Sink: Send + 'static {
    /// The snapshot of every committed event.
    fn load(&mut self) -> Result<Snapshot, String>;
    /// Commits `events` (in sequence order) atomically; durable when it returns `Ok`.
    fn commit(&mut self, events: &[Event]) -> Result<(), String>;
}

/// A sink in memory: a snapshot shared with whoever holds a clone, and a switch that makes
/// commits fail (a full disk, for tests).
#[derive(Clone, Default)]
pub struct MemorySink {
    snapshot: Arc<Mutex<Snapshot>>,
    failing: Arc<AtomicBool>,
}

impl MemorySink {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// What it holds now.
    pub fn snapshot(&self) -> Snapshot {
        lock(&self.snapshot).clone()
    }

    /// Makes the commits from now on fail (`true`) or succeed again.
    pub fn set_failing(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }
}

impl From<Snapshot> for MemorySink {
    /// A store holding `snapshot` (what a crash left on disk, for tests).
    fn from(snapshot: Snapshot) -> Self {
        MemorySink {
            snapshot: Arc::new(Mutex::new(snapshot)),
            failing: Arc::default(),
        }
    }
}

impl Sink for MemorySink {
    fn load(&mut self) -> Result<Snapshot, String> {
        Ok(self.snapshot())
    }

    fn commit(&mut self, events: &[Event]) -> Result<(), String> {
        if self.failing.load(Ordering::SeqCst) {
            return Err("the memory store is set to fail".into());
        }
        let mut snapshot = lock(&self.snapshot);
        for event in events {
            snapshot.apply(event);
        }
        Ok(())
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
