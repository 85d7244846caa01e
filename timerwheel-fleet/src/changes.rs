//! Adds, resets and deletes made through a node ([`crate::Runner`]), kept while PostgreSQL
//! does not answer.
//!
//! A change is written at once (one statement, committed) when the server answers, and the
//! call returns [`Status::Written`] with its outcome. When it does not (no connection can
//! be opened within the connect timeout, or the connection broke), the change goes into
//! the node's **buffer of unwritten changes** and the call returns [`Status::Buffered`]
//! with the cause at once: a call never waits for the server to come back. The buffer
//! holds at most [`Settings::buffer`](crate::Settings::buffer) changes; past that a change
//! is refused with [`FleetError::BufferFull`] and nothing of it is kept. Buffered changes
//! are written in their order, before any newer change, at the node's next tick once the
//! server answers (within a renew interval) or at the next call, whichever comes first.
//!
//! A buffered change is written later, so its outcome comes later: one the database then
//! refuses (an add of a (key, name) that exists by then, without `replace`) is reported as
//! a [`NodeEvent::Error`] and dropped. A change whose connection broke while it ran may
//! have committed: it is written again, so an add without `replace` can then be reported
//! as existing (it is there, once). The buffer lives in the process: a node that dies
//! loses it (the calls said `Buffered`, not `Written`).

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use postgres::Client;

use crate::error::{FleetError, Result};
use crate::runner::NodeEvent;
use crate::schema::check_schema;
use crate::store::{add_timer, add_timers, check_timer, delete_timer, reset_timer, NewTimer};
use crate::{ConnectOptions, Key};

/// The buffer's bound unless told otherwise.
pub const DEFAULT_BUFFER: usize = 10_000;

/// How long after a failed connection attempt a change is buffered without trying again.
const RETRY: Duration = Duration::from_millis(100);

/// At most this many buffered adds in a row are written in one statement.
const FLUSH_ADDS: usize = 1_000;

/// A connection idle for longer is checked (one empty query, within the connect timeout)
/// before a change is written on it: a server restarted meanwhile is found before the
/// change is sent, not while it runs.
const IDLE_CHECK: Duration = Duration::from_secs(1);

/// A change to the timers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// Adds a timer (as [`add_timer`]).
    Add {
        /// The application's key.
        key: Key,
        /// The handler's name.
        name: String,
        /// The bytes the handler is given.
        payload: Vec<u8>,
        /// The first deadline, ms since the Unix epoch.
        due_ms: i64,
        /// The period in ms; 0 for a one-shot.
        period_ms: i64,
        /// Replaces a timer of the same (key, name).
        replace: bool,
    },
    /// Moves a timer's next deadline (as [`reset_timer`]).
    Reset {
        /// The timer's key.
        key: Key,
        /// The timer's name.
        name: String,
        /// The new deadline, ms since the Unix epoch.
        due_ms: i64,
    },
    /// Removes a timer (as [`delete_timer`]).
    Delete {
        /// The timer's key.
        key: Key,
        /// The timer's name.
        name: String,
    },
}

impl Change {
    /// The add of `timer`.
    pub fn add(timer: &NewTimer<'_>) -> Self {
        Change::Add {
            key: timer.key,
            name: timer.name.to_owned(),
            payload: timer.payload.to_vec(),
            due_ms: timer.due_ms,
            period_ms: timer.period_ms,
            replace: timer.replace,
        }
    }

    /// Refuses a change that could never be written (before it is buffered).
    fn check(&self) -> Result<()> {
        match self {
            Change::Add {
                key,
                name,
                period_ms,
                ..
            } => check_timer(*key, name, *period_ms),
            Change::Reset { key, name, .. } | Change::Delete { key, name } => {
                check_timer(*key, name, 0)
            }
        }
    }

    /// "add (KEY, NAME)", for reports.
    fn describe(&self) -> String {
        let (verb, key, name) = match self {
            Change::Add { key, name, .. } => ("add", key, name),
            Change::Reset { key, name, .. } => ("reset", key, name),
            Change::Delete { key, name } => ("delete", key, name),
        };
        format!("{verb} ({key}, {name:?})")
    }

    /// The timer of an add; `None` for another change.
    fn new_timer(&self) -> Option<NewTimer<'_>> {
        match self {
            Change::Add {
                key,
                name,
                payload,
                due_ms,
                period_ms,
                replace,
            } => Some(NewTimer {
                key: *key,
                name,
                payload,
                due_ms: *due_ms,
                period_ms: *period_ms,
                replace: *replace,
            }),
            _ => None,
        }
    }

    fn write(&self, client: &mut Client, shards: i32) -> Result<Outcome> {
        if let Some(timer) = self.new_timer() {
            return add_timer(client, shards, &timer).map(|version| Outcome::Added { version });
        }
        match self {
            Change::Add { .. } => unreachable!("an add has its timer"),
            Change::Reset { key, name, due_ms } => {
                reset_timer(client, *key, name, *due_ms).map(|found| Outcome::Reset { found })
            }
            Change::Delete { key, name } => {
                delete_timer(client, *key, name).map(|found| Outcome::Deleted { found })
            }
        }
    }
}

/// Adds `timers` in one transaction: each one's outcome, or nothing written and
/// [`FleetError::ShardCount`] when the shard count moved (then true of all of them: the
/// transaction read one count).
fn add_all_or_none(
    client: &mut Client,
    shards: i32,
    timers: &[NewTimer<'_>],
) -> Result<Vec<Result<i64>>> {
    let mut tx = client.transaction()?;
    let outcomes = add_timers(&mut tx, shards, timers)?;
    if let Some(Err(FleetError::ShardCount { expected, found })) = outcomes
        .iter()
        .find(|o| matches!(o, Err(FleetError::ShardCount { .. })))
    {
        return Err(FleetError::ShardCount {
            expected: *expected,
            found: *found,
        });
    }
    tx.commit()?;
    Ok(outcomes)
}

/// What a written change did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The timer was added with this version.
    Added {
        /// Its version (incarnation).
        version: i64,
    },
    /// The timer was moved (`found`), or there was none.
    Reset {
        /// Whether there was such a timer.
        found: bool,
    },
    /// The timer was removed (`found`), or there was none.
    Deleted {
        /// Whether there was such a timer.
        found: bool,
    },
}

/// The status of a change made through a node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// Committed in PostgreSQL, with its outcome.
    Written(Outcome),
    /// PostgreSQL did not answer (`cause`): the change waits in the buffer (`pending`
    /// changes, this one included) and is written when it answers again.
    Buffered {
        /// Changes in the buffer now.
        pending: usize,
        /// Why it was not written (the connection's error, never the connection string).
        cause: String,
    },
}

/// Why a change was not written.
enum Failure {
    /// The server did not answer: the change can wait.
    Unreachable(String),
    /// The database refused it: it never will be written.
    Refused(FleetError),
}

/// The node's writer of changes: its connection and its buffer.
pub(crate) struct Writer {
    options: ConnectOptions,
    bound: usize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// The connection, the shard count read on it, and when it was last used.
    client: Option<(Client, i32, Instant)>,
    buffer: VecDeque<Change>,
    /// The last failed connection attempt and its cause.
    failed: Option<(Instant, String)>,
}

impl Writer {
    /// A writer connecting with `options` (which carry the connect timeout), buffering up
    /// to `bound` changes.
    pub(crate) fn new(options: ConnectOptions, bound: usize) -> Self {
        Self {
            options,
            bound,
            inner: Mutex::default(),
        }
    }

    /// Writes `change` after the buffer, or buffers it (see the module's doc).
    pub(crate) fn apply(&self, change: Change, report: &dyn Fn(NodeEvent)) -> Result<Status> {
        change.check()?;
        let mut inner = self.lock();
        let cause = match inner.flush(&self.options, report, None) {
            Ok(()) => match inner.write(&self.options, &change) {
                Ok(outcome) => return Ok(Status::Written(outcome)),
                Err(Failure::Refused(error)) => return Err(error),
                Err(Failure::Unreachable(cause)) => cause,
            },
            Err(cause) => cause,
        };
        if inner.buffer.len() >= self.bound {
            return Err(FleetError::BufferFull {
                bound: self.bound,
                cause,
            });
        }
        inner.buffer.push_back(change);
        Ok(Status::Buffered {
            pending: inner.buffer.len(),
            cause,
        })
    }

    /// Writes the buffered changes; [`FleetError::Unreachable`] when the server did not
    /// answer (those not written stay, in order).
    pub(crate) fn flush(&self, report: &dyn Fn(NodeEvent)) -> Result<()> {
        let mut inner = self.lock();
        inner
            .flush(&self.options, report, None)
            .map_err(|cause| FleetError::Unreachable {
                cause,
                pending: inner.buffer.len(),
            })
    }

    /// Writes buffered changes for at most `budget` (the node's driver, between two
    /// ticks); nothing when a call is writing (it writes the buffer first).
    pub(crate) fn flush_for(&self, budget: Duration, report: &dyn Fn(NodeEvent)) {
        let inner = match self.inner.try_lock() {
            Ok(inner) => Some(inner),
            Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        };
        if let Some(mut inner) = inner.filter(|i| !i.buffer.is_empty()) {
            let _ = inner.flush(&self.options, report, Some(Instant::now() + budget));
        }
    }

    /// Changes in the buffer.
    pub(crate) fn pending(&self) -> usize {
        self.lock().buffer.len()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Inner {
    /// Writes the buffer, oldest first, until it is empty or `until` passed; the cause
    /// when the server stopped answering.
    fn flush(
        &mut self,
        options: &ConnectOptions,
        report: &dyn Fn(NodeEvent),
        until: Option<Instant>,
    ) -> std::result::Result<(), String> {
        while !self.buffer.is_empty() {
            if until.is_some_and(|until| Instant::now() >= until) {
                return Ok(());
            }
            for outcome in self.write_next(options) {
                match outcome {
                    Ok(()) => {}
                    Err(Failure::Unreachable(cause)) => return Err(cause),
                    Err(Failure::Refused(error)) => report(NodeEvent::Error(format!(
                        "the buffered {} was refused: {error}",
                        self.buffer.front().map_or(String::new(), Change::describe)
                    ))),
                }
                self.buffer.pop_front();
            }
        }
        Ok(())
    }

    /// Writes the oldest change of the buffer, or the adds in a row from it (up to
    /// `FLUSH_ADDS`) in one statement: the outcome of each written, oldest first (one
    /// `Unreachable` when nothing could be).
    fn write_next(&mut self, options: &ConnectOptions) -> Vec<std::result::Result<(), Failure>> {
        let adds: Vec<Change> = self
            .buffer
            .iter()
            .take(FLUSH_ADDS)
            .take_while(|c| c.new_timer().is_some())
            .cloned()
            .collect();
        if adds.len() > 1 {
            match self.write_adds(options, &adds) {
                Ok(outcomes) => {
                    return outcomes
                        .into_iter()
                        .map(|o| o.map(drop).map_err(Failure::Refused))
                        .collect()
                }
                Err(unreachable @ Failure::Unreachable(_)) => return vec![Err(unreachable)],
                // Refused as a whole (not for one timer's sake): one by one tells which.
                Err(Failure::Refused(_)) => {}
            }
        }
        let Some(change) = self.buffer.front().cloned() else {
            return Vec::new();
        };
        vec![self.write(options, &change).map(drop)]
    }

    /// Writes one change on the connection, opened again if need be.
    fn write(
        &mut self,
        options: &ConnectOptions,
        change: &Change,
    ) -> std::result::Result<Outcome, Failure> {
        self.write_with(options, |client, shards| change.write(client, shards))
    }

    /// Writes the adds `adds` in one transaction (one statement, see [`add_timers`]): the
    /// outcome of each.
    fn write_adds(
        &mut self,
        options: &ConnectOptions,
        adds: &[Change],
    ) -> std::result::Result<Vec<Result<i64>>, Failure> {
        let timers: Vec<NewTimer<'_>> = adds.iter().filter_map(Change::new_timer).collect();
        self.write_with(options, |client, shards| {
            add_all_or_none(client, shards, &timers)
        })
    }

    /// Runs `write` on the connection, opened again if need be, for the shard count read
    /// on it (read again and `write` run again when a migration moved it).
    fn write_with<T>(
        &mut self,
        options: &ConnectOptions,
        mut write: impl FnMut(&mut Client, i32) -> Result<T>,
    ) -> std::result::Result<T, Failure> {
        self.connect(options)?;
        let Some((client, shards, used)) = self.client.as_mut() else {
            unreachable!("connected above");
        };
        let mut written = write(client, *shards);
        if let Err(FleetError::ShardCount { found, .. }) = written {
            *shards = found; // a migration ran: the change is for the new count
            written = write(client, found);
        }
        *used = Instant::now();
        match written {
            Ok(outcome) => Ok(outcome),
            Err(error) if client.is_closed() => Err(self.unreachable(error.to_string())),
            Err(error) => Err(Failure::Refused(error)),
        }
    }

    /// Makes sure of a connection: the one it has if it answers, else a new one (tried at
    /// most every [`RETRY`]).
    fn connect(&mut self, options: &ConnectOptions) -> std::result::Result<(), Failure> {
        if let Some((client, _, used)) = self.client.as_mut() {
            let timeout = options.connect_timeout();
            let stale = used.elapsed() > IDLE_CHECK && client.is_valid(timeout).is_err();
            if !stale && !client.is_closed() {
                return Ok(());
            }
            self.client = None;
        }
        if let Some((at, cause)) = &self.failed {
            if at.elapsed() < RETRY {
                return Err(Failure::Unreachable(cause.clone()));
            }
        }
        let opened = options.connect().and_then(|mut client| {
            let shards = check_schema(&mut client)?;
            Ok((client, shards, Instant::now()))
        });
        match opened {
            Ok(opened) => {
                self.client = Some(opened);
                self.failed = None;
                Ok(())
            }
            Err(error @ (FleetError::NoSchema | FleetError::SchemaVersion { .. })) => {
                Err(Failure::Refused(error))
            }
            Err(FleetError::Connect(cause)) => Err(self.unreachable(cause)),
            Err(other) => Err(self.unreachable(other.to_string())),
        }
    }

    fn unreachable(&mut self, cause: String) -> Failure {
        self.client = None;
        self.failed = Some((Instant::now(), cause.clone()));
        Failure::Unreachable(cause)
    }
}
