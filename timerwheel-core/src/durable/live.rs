//! The durable timers in memory, each with its timer in the runtime; every change is made
//! here under one lock and journalled in the same order.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::SystemTime;

use super::clock::{from_ms, to_ms};
use super::event::{epoch_of, Change, Key, Snapshot, StoredFire, StoredTimer, Token, EPOCH_BITS};
use super::journal::Journal;
use super::registry::{Ack, Fired, Registry};
use super::{DurableError, DurableStats, DurableTimer, MissedPoints, RuntimeRef};
use crate::{BoxTask, Error, Runtime, Task, TimerId};

struct LiveTimer {
    stored: StoredTimer,
    id: TimerId,
}

#[derive(Default)]
struct Live {
    /// Ordered as the store returns them: a restore builds it in one sequential pass (a
    /// hash table of a million took half the restore, in random writes to ~270 MB).
    timers: BTreeMap<(Key, String), LiveTimer>,
    fires: HashMap<Token, StoredFire>,
    closed: bool,
    /// Set until the stored timers are scheduled: changes wait for it.
    restoring: bool,
    /// The generation of the epochs this process hands out, committed by the open.
    generation: u64,
    /// How many epochs of it were handed out.
    epochs: u64,
}

impl Live {
    /// A new epoch, never handed out before in this store's life (even by a process that
    /// crashed before committing the change that took it). After a generation's last, the
    /// next waits for the commit of a new generation.
    fn next_epoch(&mut self, journal: &Journal) -> Result<u64, DurableError> {
        if self.epochs == (1 << EPOCH_BITS) - 1 {
            journal.begin_generation(self.generation + 1)?;
            self.generation += 1;
            self.epochs = 0;
        }
        self.epochs += 1;
        Ok(epoch_of(self.generation, self.epochs))
    }
}

/// What the store's handle and its timers' tasks share.
pub struct Shared<T: Task + From<BoxTask>> {
    runtime: Box<dyn RuntimeRef<T>>,
    pub journal: Journal,
    registry: Registry,
    missed: MissedPoints,
    live: Mutex<Live>,
    restored: Condvar,
    redelivered: AtomicU64,
    acks: AtomicU64,
}

impl<T: Task + From<BoxTask>> Shared<T> {
    pub fn new(
        runtime: Box<dyn RuntimeRef<T>>,
        registry: Registry,
        journal: Journal,
        missed: MissedPoints,
        generation: u64,
    ) -> Arc<Self> {
        Arc::new(Shared {
            runtime,
            journal,
            registry,
            missed,
            live: Mutex::new(Live {
                restoring: true,
                generation,
                ..Live::default()
            }),
            restored: Condvar::new(),
            redelivered: AtomicU64::new(0),
            acks: AtomicU64::new(0),
        })
    }

    /// Schedules every stored timer and delivers every unacknowledged fire again; the
    /// changes waiting for it go on once it is done.
    pub fn restore(self: &Arc<Self>, snapshot: Snapshot) -> Result<(), Error> {
        let mut live = self.lock();
        let restored = self.schedule_stored(&mut live, snapshot);
        live.restoring = false;
        self.restored.notify_all();
        restored
    }

    fn schedule_stored(self: &Arc<Self>, live: &mut Live, snapshot: Snapshot) -> Result<(), Error> {
        let now_ms = to_ms(self.runtime().now());
        let mut timers = snapshot.timers;
        for stored in timers.values_mut() {
            stored.deadline_ms = self.first_due(stored, now_ms);
        }
        let tasks = timers.values().map(|stored| self.task_of(stored));
        let ids = self.runtime().add_many_at(tasks)?;
        let restored = timers.into_iter().zip(ids);
        live.timers = restored
            .map(|((id, stored), timer)| (id, LiveTimer { stored, id: timer }))
            .collect();
        let redeliveries = snapshot.fires.keys().map(|token| self.redelivery_of(token));
        self.runtime().add_many_at(redeliveries)?;
        live.fires.extend(snapshot.fires);
        Ok(())
    }

    pub fn add(self: &Arc<Self>, timer: &DurableTimer<'_>) -> Result<(), DurableError> {
        self.report_failure()?;
        if self.registry.get(timer.name).is_none() {
            return Err(DurableError::NoHandler(timer.name.to_owned()));
        }
        let period_ms = timer.period.map_or(0, |p| {
            u64::try_from(p.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
        });
        let seq = {
            let mut live = self.ready();
            let id = (timer.key, timer.name.to_owned());
            let old = live.timers.get(&id).map(|t| t.id);
            if old.is_some() && !timer.replace {
                return Err(DurableError::Exists);
            }
            let stored = StoredTimer {
                key: timer.key,
                name: timer.name.to_owned(),
                payload: timer.payload.to_vec(),
                deadline_ms: self.first_owed(to_ms(timer.first), period_ms),
                period_ms,
                epoch: live.next_epoch(&self.journal)?,
            };
            let new = self.schedule(&stored).map_err(DurableError::Runtime)?;
            if let Some(old) = old {
                let _ = self.runtime().cancel(old);
            }
            let seq = self.journal.push(Change::Add(stored.clone()));
            live.timers.insert(id, LiveTimer { stored, id: new });
            seq
        };
        self.settle(seq)
    }

    pub fn reset(self: &Arc<Self>, key: Key, name: &str, when_ms: i64) -> Result<(), DurableError> {
        self.report_failure()?;
        let seq = {
            let mut live = self.ready();
            let id = (key, name.to_owned());
            if !live.timers.contains_key(&id) {
                return Err(DurableError::NotFound);
            }
            // A new epoch: the schedule may pass points it fired at, and a fire must never
            // carry the token of one acknowledged before.
            let epoch = live.next_epoch(&self.journal)?;
            let timer = live.timers.get_mut(&id).ok_or(DurableError::NotFound)?;
            let mut stored = timer.stored.clone();
            let deadline_ms = self.first_owed(when_ms, stored.period_ms);
            stored.deadline_ms = deadline_ms;
            stored.epoch = epoch;
            let new = self.schedule(&stored).map_err(DurableError::Runtime)?;
            let _ = self.runtime().cancel(timer.id);
            *timer = LiveTimer { stored, id: new };
            self.journal.push(Change::Reset {
                key,
                name: name.to_owned(),
                deadline_ms,
                epoch,
            })
        };
        self.settle(seq)
    }

    pub fn delete(&self, key: Key, name: &str) -> Result<(), DurableError> {
        self.report_failure()?;
        let seq = {
            let mut live = self.ready();
            let timer = live
                .timers
                .remove(&(key, name.to_owned()))
                .ok_or(DurableError::NotFound)?;
            let _ = self.runtime().cancel(timer.id);
            self.journal.push(Change::Delete {
                key,
                name: name.to_owned(),
            })
        };
        self.settle(seq)
    }

    pub fn ack(&self, tokens: &[Token]) -> Result<usize, DurableError> {
        self.report_failure()?;
        let (acked, seq) = self.ack_locked(tokens);
        // Tokens acknowledged already: their acknowledgement may still wait for a commit.
        let seq = seq.unwrap_or_else(|| self.journal.next_seq() - 1);
        self.settle(seq).map(|()| acked)
    }

    fn ack_locked(&self, tokens: &[Token]) -> (usize, Option<u64>) {
        let mut live = self.ready();
        let matched: Vec<Change> = tokens
            .iter()
            .filter(|token| live.fires.remove(*token).is_some())
            .map(|token| Change::Ack(token.clone()))
            .collect();
        self.acks.fetch_add(matched.len() as u64, Ordering::Relaxed);
        (matched.len(), self.journal.push_all(matched))
    }

    pub fn stats(&self) -> DurableStats {
        let progress = self.journal.progress();
        let live = self.lock();
        DurableStats {
            last_seq: progress.last_seq,
            durable_seq: progress.durable_seq,
            sink_failures: progress.failures,
            timers: live.timers.len() as u64,
            unacked_fires: live.fires.len() as u64,
            redelivered: self.redelivered.load(Ordering::Relaxed),
            commits: progress.commits,
            acks: self.acks.load(Ordering::Relaxed),
        }
    }

    /// Cancels the runtime's timers (the store keeps them) and commits what is queued.
    pub fn close(&self) {
        let ids: Vec<TimerId> = {
            let mut live = self.lock();
            live.closed = true;
            live.timers.values().map(|t| t.id).collect()
        };
        for id in ids {
            let _ = self.runtime().cancel(id);
        }
        self.journal.close();
    }

    /// The first point a periodic timer added or reset to `when_ms` owes: the latest point
    /// of its schedule that passed, if any (due at once), since the points before the call
    /// were never owed; the missed-points policy covers those missed while down.
    fn first_owed(&self, when_ms: i64, period_ms: u64) -> i64 {
        latest_point(when_ms, period_ms, to_ms(self.runtime().now()))
    }

    /// The deadline a restored timer is scheduled at: a periodic timer under
    /// [`MissedPoints::Coalesce`] skips to the latest point that passed.
    fn first_due(&self, stored: &StoredTimer, now_ms: i64) -> i64 {
        match self.missed {
            MissedPoints::Coalesce if stored.period_ms > 0 => {
                latest_point(stored.deadline_ms, stored.period_ms, now_ms)
            }
            _ => stored.deadline_ms,
        }
    }

    fn schedule(self: &Arc<Self>, stored: &StoredTimer) -> Result<TimerId, Error> {
        let (when, task) = self.task_of(stored);
        self.runtime()
            .add_at(when, task)
            .map_err(|rejected| rejected.error)
    }

    /// The runtime timer of `stored`: its deadline, and the task that fires it.
    fn task_of(self: &Arc<Self>, stored: &StoredTimer) -> (SystemTime, T) {
        let shared = Arc::downgrade(self);
        let name = self.registry.name(&stored.name);
        let name = name.unwrap_or_else(|| Arc::from(stored.name.as_str()));
        let (key, epoch) = (stored.key, stored.epoch);
        let occurrence_ms = stored.deadline_ms;
        let task: BoxTask = Box::new(move |id| {
            if let Some(shared) = Weak::upgrade(&shared) {
                shared.fire(key, &name, epoch, occurrence_ms, id);
            }
        });
        (from_ms(occurrence_ms), T::from(task))
    }

    /// The runtime timer that delivers the restored fire `token` again.
    fn redelivery_of(self: &Arc<Self>, token: &Token) -> (SystemTime, T) {
        let shared = Arc::downgrade(self);
        let token = token.clone();
        let when = from_ms(token.occurrence_ms);
        let task: BoxTask = Box::new(move |_| {
            if let Some(shared) = Weak::upgrade(&shared) {
                shared.redeliver(&token);
            }
        });
        (when, T::from(task))
    }

    /// A timer's task ran: journal the fire, schedule a periodic timer's next point, and
    /// hand the fire to its handler. A task that a reset or delete overtook does nothing.
    /// A fire first waits for the store as changes do (a store behind its timers' fires
    /// held up every other change, and a crash lost more than the delay), before it ends
    /// or moves its timer: a reset or delete that finds it fired then finds its handler
    /// running, not waiting.
    fn fire(self: &Arc<Self>, key: Key, name: &str, epoch: u64, occurrence_ms: i64, id: TimerId) {
        self.journal.wait_backlog_of_next();
        let fire = {
            let mut live = self.lock();
            if live.closed {
                return;
            }
            let map_id = (key, name.to_owned());
            let Some(timer) = live.timers.get_mut(&map_id).filter(|t| t.id == id) else {
                return;
            };
            let token = Token {
                key,
                name: name.to_owned(),
                occurrence_ms,
                epoch,
            };
            let fire = StoredFire {
                token,
                payload: timer.stored.payload.clone(),
            };
            let next_ms = self.next_point(&timer.stored);
            self.journal.push(Change::Fire {
                fire: fire.clone(),
                next_ms,
            });
            match next_ms {
                Some(next) => {
                    timer.stored.deadline_ms = next;
                    match self.schedule(&timer.stored) {
                        Ok(new) => timer.id = new,
                        // The runtime shuts down: the store keeps the next point.
                        Err(_) => {
                            live.timers.remove(&map_id);
                        }
                    }
                }
                None => {
                    live.timers.remove(&map_id);
                }
            }
            live.fires.insert(fire.token.clone(), fire.clone());
            fire
        };
        self.deliver(&fire);
    }

    fn redeliver(&self, token: &Token) {
        let fire = {
            let live = self.lock();
            match live.fires.get(token).filter(|_| !live.closed) {
                Some(fire) => fire.clone(),
                None => return,
            }
        };
        self.redelivered.fetch_add(1, Ordering::Relaxed);
        self.deliver(&fire);
    }

    fn deliver(&self, fire: &StoredFire) {
        let Some(handler) = self.registry.get(&fire.token.name) else {
            return;
        };
        let fired = Fired {
            token: &fire.token,
            payload: &fire.payload,
        };
        if handler(&fired) == Ack::Now {
            // A failure to commit it is reported by the next call.
            let _ = self.ack_locked(std::slice::from_ref(&fire.token));
        }
    }

    /// A periodic timer's deadline after the fire at its current one.
    fn next_point(&self, stored: &StoredTimer) -> Option<i64> {
        if stored.period_ms == 0 {
            return None;
        }
        let period = i64::try_from(stored.period_ms).unwrap_or(i64::MAX);
        let next = stored.deadline_ms.saturating_add(period);
        Some(match self.missed {
            MissedPoints::Each => next,
            MissedPoints::Coalesce => {
                latest_point(next, stored.period_ms, to_ms(self.runtime().now()))
            }
        })
    }

    fn report_failure(&self) -> Result<(), DurableError> {
        match self.journal.take_failure() {
            Some(message) => Err(DurableError::Store(message)),
            None => Ok(()),
        }
    }

    fn settle(&self, seq: u64) -> Result<(), DurableError> {
        self.journal.settle(seq).map_err(DurableError::Store)
    }

    pub fn runtime(&self) -> &Runtime<T> {
        self.runtime.get()
    }

    fn lock(&self) -> MutexGuard<'_, Live> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The lock, once the stored timers are scheduled (a change made before would be
    /// overwritten by the restore).
    fn ready(&self) -> MutexGuard<'_, Live> {
        let mut live = self.lock();
        while live.restoring {
            live = self.restored.wait(live).unwrap_or_else(|p| p.into_inner());
        }
        live
    }
}

/// The latest point of the schedule `first + k period` at or before `now_ms`, or `first`
/// if it is still ahead.
fn latest_point(first: i64, period_ms: u64, now_ms: i64) -> i64 {
    if now_ms <= first || period_ms == 0 {
        return first;
    }
    let period = i128::from(period_ms);
    let passed = (i128::from(now_ms) - i128::from(first)) / period;
    i64::try_from(i128::from(first) + passed * period).unwrap_or(first)
}
