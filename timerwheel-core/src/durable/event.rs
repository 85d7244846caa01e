//! What the journal holds: the changes of durable timers, numbered, and the snapshot they
//! apply to. Replaying is idempotent: an event at or below the snapshot's sequence changes
//! nothing.

use std::collections::BTreeMap;

/// The application's key of a durable timer (a session id).
pub type Key = u64;

/// A durable timer as the store keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredTimer {
    /// The application's key.
    pub key: Key,
    /// The handler's name; (key, name) names the timer.
    pub name: String,
    /// The bytes handed to the handler.
    pub payload: Vec<u8>,
    /// The next deadline, ms since the Unix epoch (wall clock).
    pub deadline_ms: i64,
    /// The period in ms; 0 for a one-shot.
    pub period_ms: u64,
    /// The incarnation of its schedule: the sequence number of the add or reset that set it.
    pub epoch: u64,
}

/// Names one fire of a durable timer: the application stores it with its effect and
/// acknowledges it; a fire delivered again carries the same token.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Token {
    /// The timer's key.
    pub key: Key,
    /// The timer's (handler's) name.
    pub name: String,
    /// The scheduled deadline of this fire, ms since the Unix epoch.
    pub occurrence_ms: i64,
    /// The timer's incarnation ([`StoredTimer::epoch`]).
    pub epoch: u64,
}

/// A fire not acknowledged yet, with what its handler is given again after a restore.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredFire {
    /// Its token.
    pub token: Token,
    /// The timer's payload at the fire.
    pub payload: Vec<u8>,
}

/// One change of the durable timers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// A timer added, or replacing the one of its (key, name).
    Add(StoredTimer),
    /// A timer's next deadline moved: its schedule starts again, under a new epoch.
    Reset {
        /// The timer's key.
        key: Key,
        /// The timer's name.
        name: String,
        /// The new deadline, ms since the Unix epoch.
        deadline_ms: i64,
        /// The timer's new epoch ([`StoredTimer::epoch`]).
        epoch: u64,
    },
    /// A timer removed.
    Delete {
        /// The timer's key.
        key: Key,
        /// The timer's name.
        name: String,
    },
    /// A timer fired: the fire waits for its acknowledgement; a periodic timer goes on at
    /// `next_ms`, a one-shot ends.
    Fire {
        /// The fire.
        fire: StoredFire,
        /// The periodic timer's next deadline; `None` for a one-shot.
        next_ms: Option<i64>,
    },
    /// A fire acknowledged.
    Ack(Token),
    /// A generation of epochs begins: each open commits one before it hands out an epoch,
    /// so that an epoch handed out by a process that crashed before its change was committed
    /// is never handed out again (docs/durable.md, "Tokens").
    Generation(u64),
}

/// How many epochs a generation holds: the epochs of generation `g` are `g << EPOCH_BITS`
/// plus 1, 2, ... (a process that hands out all of them begins a generation of its own).
pub const EPOCH_BITS: u32 = 40;

/// The `n`th epoch (from 1) of `generation`.
pub fn epoch_of(generation: u64, n: u64) -> u64 {
    (generation << EPOCH_BITS) | n
}

/// A change with its sequence number (1, 2, ... in one order for the whole store).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Its sequence number.
    pub seq: u64,
    /// What changed.
    pub change: Change,
}

/// The durable timers and the unacknowledged fires as of the event `seq`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// The last event it covers.
    pub seq: u64,
    /// The timers by (key, name).
    pub timers: BTreeMap<(Key, String), StoredTimer>,
    /// The unacknowledged fires by their token.
    pub fires: BTreeMap<Token, StoredFire>,
    /// The latest generation of epochs ([`Change::Generation`]).
    pub generation: u64,
}

impl Snapshot {
    /// Applies `event` if it is past the snapshot's sequence; returns whether it did.
    pub fn apply(&mut self, event: &Event) -> bool {
        if event.seq <= self.seq {
            return false;
        }
        self.seq = event.seq;
        match &event.change {
            Change::Add(timer) => {
                self.timers
                    .insert((timer.key, timer.name.clone()), timer.clone());
            }
            Change::Reset {
                key,
                name,
                deadline_ms,
                epoch,
            } => {
                if let Some(timer) = self.timers.get_mut(&(*key, name.clone())) {
                    timer.deadline_ms = *deadline_ms;
                    timer.epoch = *epoch;
                }
            }
            Change::Delete { key, name } => {
                self.timers.remove(&(*key, name.clone()));
            }
            Change::Fire { fire, next_ms } => self.apply_fire(fire, *next_ms),
            Change::Ack(token) => {
                self.fires.remove(token);
            }
            Change::Generation(generation) => self.generation = *generation,
        }
        true
    }

    fn apply_fire(&mut self, fire: &StoredFire, next_ms: Option<i64>) {
        let token = &fire.token;
        let id = (token.key, token.name.clone());
        if let Some(timer) = self.timers.get_mut(&id) {
            if timer.epoch == token.epoch {
                match next_ms {
                    Some(next) => timer.deadline_ms = next,
                    None => {
                        self.timers.remove(&id);
                    }
                }
            }
        }
        self.fires.insert(token.clone(), fire.clone());
    }
}
