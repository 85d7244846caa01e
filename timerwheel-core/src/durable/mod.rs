//! Durable timers (docs/durable.md): timers named by (key, handler name) with a payload,
//! whose changes and fires are journalled to a [`Sink`] and restored after a crash, every
//! unacknowledged fire delivered again with its original [`Token`].
//!
//! A layer on the public [`Runtime`] API: a durable timer is a wall-clock timer
//! ([`Runtime::add_at`]) whose task dispatches to the handler and journals the fire.

mod clock;
mod error;
mod event;
mod journal;
mod live;
mod registry;
mod sink;
#[cfg(feature = "sqlite")]
mod sqlite;

#[cfg(feature = "sqlite")]
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

pub use error::DurableError;
pub use event::{Change, Event, Key, Snapshot, StoredFire, StoredTimer, Token};
pub use journal::Mode;
pub use registry::{Ack, Fired, Handler};
pub use sink::{MemorySink, Sink};
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteSink, SCHEMA_VERSION};

use crate::{BoxTask, Error, Runtime, Task};
use journal::{FlushRefused, Journal};
use live::Shared;
use registry::Registry;

/// What a periodic durable timer does with the points that passed while the process was
/// down (or its handlers fell behind).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MissedPoints {
    /// Every point is delivered, in order, each with its own token.
    #[default]
    Each,
    /// One fire for the latest point that passed; the schedule goes on from there.
    Coalesce,
}

/// A durable timer to add.
#[derive(Clone, Debug)]
pub struct DurableTimer<'a> {
    /// The application's key (a session id).
    pub key: Key,
    /// The handler's name, registered before the store was opened.
    pub name: &'a str,
    /// The bytes the handler is given.
    pub payload: &'a [u8],
    /// The first deadline on the runtime's wall clock (rounded up to the ms).
    pub first: SystemTime,
    /// `Some(period)` for a periodic timer (at a fixed rate; rounded up to the ms).
    pub period: Option<Duration>,
    /// Replaces a timer of the same (key, name); without it such an add is `Exists`.
    pub replace: bool,
}

/// Counters of a durable store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DurableStats {
    /// The last sequence number journalled.
    pub last_seq: u64,
    /// The last sequence number committed to the sink.
    pub durable_seq: u64,
    /// Commits that failed.
    pub sink_failures: u64,
    /// Durable timers now.
    pub timers: u64,
    /// Fires not acknowledged yet.
    pub unacked_fires: u64,
    /// Fires delivered again after a restore.
    pub redelivered: u64,
    /// Commits that succeeded (a batch each).
    pub commits: u64,
    /// Fires acknowledged (by `ack` or a handler's [`Ack::Now`]).
    pub acks: u64,
}

impl DurableStats {
    /// Events journalled and not committed yet: what a crash now would lose.
    pub fn pending_events(&self) -> u64 {
        self.last_seq - self.durable_seq
    }
}

/// How a store reaches the runtime it schedules on: an `Arc<Runtime<T>>`, or a handle that
/// outlives the store (the C wheel that owns both).
pub trait RuntimeRef<T: Task>: Send + Sync + 'static {
    /// The runtime.
    fn get(&self) -> &Runtime<T>;
}

impl<T: Task> RuntimeRef<T> for Arc<Runtime<T>> {
    fn get(&self) -> &Runtime<T> {
        self
    }
}

/// Registers handlers, then opens a store: restores, then journals.
#[derive(Clone, Default)]
pub struct DurableBuilder {
    registry: Registry,
    mode: Mode,
    missed: MissedPoints,
    duplicate: Option<String>,
}

impl DurableBuilder {
    /// Registers `handler` for the timers named `name`.
    pub fn handler(
        mut self,
        name: &str,
        handler: impl Fn(&Fired<'_>) -> Ack + Send + Sync + 'static,
    ) -> Self {
        if !self.register(name, Arc::new(handler)) {
            self.duplicate.get_or_insert_with(|| name.to_owned());
        }
        self
    }

    /// Registers `handler` under `name`; `false` (nothing changes) if the name is taken.
    pub fn register(&mut self, name: &str, handler: Handler) -> bool {
        self.registry.register(name, handler)
    }

    /// When a change is durable ([`Mode`]); async with batches of 1000 and 10 ms by default.
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// The policy for periodic points missed while down ([`MissedPoints::Each`] by default).
    pub fn missed(mut self, missed: MissedPoints) -> Self {
        self.missed = missed;
        self
    }

    /// Restores the timers of `sink` into `runtime`, then journals to it.
    pub fn open<T: Task + From<BoxTask>>(
        self,
        runtime: impl RuntimeRef<T>,
        sink: impl Sink,
    ) -> Result<Durable<T>, DurableError> {
        self.open_boxed(Box::new(runtime), Box::new(sink))
    }

    /// [`open`](Self::open) on the SQLite store at `path` (created, mode 0600, if missing).
    #[cfg(feature = "sqlite")]
    pub fn open_sqlite<T: Task + From<BoxTask>>(
        self,
        runtime: impl RuntimeRef<T>,
        path: impl AsRef<Path>,
    ) -> Result<Durable<T>, DurableError> {
        let sink = SqliteSink::open(path.as_ref()).map_err(DurableError::Store)?;
        self.open(runtime, sink)
    }

    fn open_boxed<T: Task + From<BoxTask>>(
        self,
        runtime: Box<dyn RuntimeRef<T>>,
        sink: Box<dyn Sink>,
    ) -> Result<Durable<T>, DurableError> {
        let (durable, restoring) = self.open_unrestored(runtime, sink)?;
        restoring.finish()?;
        Ok(durable)
    }

    /// [`open`](Self::open) in two steps, for a caller that must publish the store before
    /// its handlers run (they may call it): the store, journalling, with nothing scheduled
    /// yet; then [`Restoring::finish`] schedules its timers and redelivers its fires.
    pub fn open_unrestored<T: Task + From<BoxTask>>(
        self,
        runtime: Box<dyn RuntimeRef<T>>,
        mut sink: Box<dyn Sink>,
    ) -> Result<(Durable<T>, Restoring<T>), DurableError> {
        if let Some(name) = self.duplicate {
            return Err(DurableError::Invalid(format!(
                "the handler {name:?} is registered twice"
            )));
        }
        if let Mode::Async { batch: 0, .. } | Mode::Sync { batch: 0 } = self.mode {
            return Err(DurableError::Invalid(
                "a batch of 0 events (a commit holds at least 1)".to_owned(),
            ));
        }
        let snapshot = sink.load().map_err(DurableError::Store)?;
        let names = snapshot.timers.values().map(|t| &t.name);
        let fire_names = snapshot.fires.values().map(|f| &f.token.name);
        if let Some(name) = names
            .chain(fire_names)
            .find(|name| self.registry.get(name).is_none())
        {
            return Err(DurableError::NoHandler(name.clone()));
        }
        let journal = Journal::start(sink, snapshot.seq, self.mode);
        // Before any epoch is handed out: those of a process that crashed before committing
        // the change that took one are never handed out again.
        let generation = snapshot.generation + 1;
        journal.begin_generation(generation)?;
        let shared = Shared::new(runtime, self.registry, journal, self.missed, generation);
        let restoring = Restoring {
            shared: Arc::clone(&shared),
            snapshot: Some(snapshot),
        };
        Ok((Durable { shared }, restoring))
    }
}

/// The second step of [`DurableBuilder::open_unrestored`]: the stored timers and fires,
/// not scheduled yet. Dropped without [`finish`](Self::finish), it finishes (nothing stored
/// is left unscheduled, and the store's calls, which wait for it, go on).
pub struct Restoring<T: Task + From<BoxTask>> {
    shared: Arc<Shared<T>>,
    snapshot: Option<Snapshot>,
}

impl<T: Task + From<BoxTask>> Restoring<T> {
    /// Schedules every stored timer and delivers every unacknowledged fire again.
    pub fn finish(mut self) -> Result<(), DurableError> {
        self.restore()
    }

    fn restore(&mut self) -> Result<(), DurableError> {
        match self.snapshot.take() {
            Some(snapshot) => self.shared.restore(snapshot).map_err(DurableError::Runtime),
            None => Ok(()),
        }
    }
}

impl<T: Task + From<BoxTask>> Drop for Restoring<T> {
    fn drop(&mut self) {
        // What fails here (the runtime shut down) fails the store's next call as well.
        let _ = self.restore();
    }
}

/// An open store of durable timers over a runtime. Dropping it commits what is queued and
/// leaves every durable timer in the store (their runtime timers are cancelled).
pub struct Durable<T: Task + From<BoxTask>> {
    shared: Arc<Shared<T>>,
}

impl Durable<BoxTask> {
    /// A builder: register the handlers, then open.
    pub fn builder() -> DurableBuilder {
        DurableBuilder::default()
    }
}

impl<T: Task + From<BoxTask>> Durable<T> {
    /// Adds a durable timer. `NoHandler` for a name not registered, `Exists` for a (key,
    /// name) that has a timer unless `replace`; in sync mode returns once committed.
    pub fn add(&self, timer: &DurableTimer<'_>) -> Result<(), DurableError> {
        self.here()?.add(timer)
    }

    /// Moves the next deadline of the timer (key, name) to `when`. `NotFound` if none.
    pub fn reset(&self, key: Key, name: &str, when: SystemTime) -> Result<(), DurableError> {
        self.here()?.reset(key, name, clock::to_ms(when))
    }

    /// Removes the timer (key, name): no further fire. `NotFound` if none.
    pub fn delete(&self, key: Key, name: &str) -> Result<(), DurableError> {
        self.here()?.delete(key, name)
    }

    /// Acknowledges fires; returns how many tokens matched an unacknowledged fire.
    pub fn ack(&self, tokens: &[Token]) -> Result<usize, DurableError> {
        self.here()?.ack(tokens)
    }

    /// Commits everything queued; returns the durable sequence number.
    pub fn flush(&self) -> Result<u64, DurableError> {
        let shared = self.here()?;
        shared.journal.flush().map_err(DurableError::Store)
    }

    /// Commits the changes up to the sequence `seq` and returns the durable sequence
    /// (`seq` or more), without waiting for the changes made after it. A change's
    /// sequence is at most the [`stats`](Self::stats)' `last_seq` read once it returned.
    /// `Invalid` (nothing waited) for a sequence not handed out yet.
    pub fn flush_to(&self, seq: u64) -> Result<u64, DurableError> {
        let shared = self.here()?;
        shared
            .journal
            .flush_to(seq)
            .map_err(|refused| match refused {
                FlushRefused::NotHandedOut { seq, last } => DurableError::Invalid(format!(
                    "sequence {seq} was not handed out (the last is {last})"
                )),
                FlushRefused::Store(message) => DurableError::Store(message),
            })
    }

    /// The store while its runtime takes calls: in a fork() child of the process that
    /// opened it every call is `Forked` (the writer thread is the parent's, and its locks
    /// may be held by it), once the runtime shuts down every call is `Shutdown`; either
    /// way the call changes nothing.
    fn here(&self) -> Result<&Arc<Shared<T>>, DurableError> {
        self.runtime().check_open().map_err(DurableError::Runtime)?;
        Ok(&self.shared)
    }

    /// Its counters; `Forked` in a fork() child of the process that opened it (they are
    /// read under locks the parent's threads may have held at the fork).
    pub fn stats(&self) -> Result<DurableStats, DurableError> {
        if self.runtime().forked() {
            return Err(DurableError::Runtime(Error::Forked));
        }
        Ok(self.shared.stats())
    }

    /// The runtime it schedules on.
    pub fn runtime(&self) -> &Runtime<T> {
        self.shared.runtime()
    }
}

impl<T: Task + From<BoxTask>> Drop for Durable<T> {
    /// Commits what is queued and closes the store; in a fork() child of the process that
    /// opened it, leaves it alone (its writer thread and locks are the parent's): the
    /// child's copy is never freed.
    fn drop(&mut self) {
        if self.runtime().forked() {
            std::mem::forget(Arc::clone(&self.shared));
            return;
        }
        self.shared.close();
    }
}
