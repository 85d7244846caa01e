//! The SQLite store of durable timers (`SqliteSink`) driven by a structured input (the
//! `arbitrary` crate): batches of adds, resets, deletes, fires and acks committed to a store
//! file, some batches committed twice, some earlier events replayed, the store closed and
//! reopened between batches (a snapshot: what it loads must be the model's), then the file
//! damaged (truncated, a header field or any bytes overwritten, replaced by garbage) and
//! opened once more.
//!
//! The model is `Snapshot::apply` over the same events. An open of an undamaged store, and a
//! replay of events it holds, gives exactly the model's timers and fires. An open of a
//! damaged store gives a clear error that names the path and leaves the file byte for byte
//! as it was, or a store whose contents are the model's (a truncation or a header field
//! that loses nothing), or, for bytes overwritten inside the data, the same contents on
//! every later open (nothing rewritten). Store files live on a tmpfs (/dev/shm) when there
//! is one. Shared by the fuzz target `durable_store` and its stable replay.

use std::path::{Path, PathBuf};

use arbitrary::{Arbitrary, Unstructured};
use timerwheel_core::durable::{
    Change, Event, Sink, Snapshot, SqliteSink, StoredFire, StoredTimer, Token,
};

/// Most batches, changes per batch and payload bytes of one scenario: a scenario stays
/// well under a millisecond of SQLite work.
const MAX_BATCHES: usize = 6;
const MAX_CHANGES: usize = 8;
const MAX_PAYLOAD: usize = 12;
/// Handler names: the empty one, plain, non-ASCII and one holding a NUL.
const NAMES: [&str; 4] = ["", "a", "sess\u{e9}", "x\0y"];
/// The SQLite header fields a damage may overwrite: (offset, length) of the magic string,
/// page size, file format versions, reserved bytes, payload fractions, page count, user
/// version and application id.
const HEADER_FIELDS: [(usize, usize); 9] = [
    (0, 16),
    (16, 2),
    (18, 2),
    (20, 1),
    (21, 3),
    (28, 4),
    (56, 4),
    (60, 4),
    (68, 4),
];

#[derive(Arbitrary, Debug)]
struct Scenario {
    batches: Vec<Batch>,
    damage: Damage,
}

#[derive(Arbitrary, Debug)]
struct Batch {
    changes: Vec<Op>,
    /// The batch is committed a second time right after the first.
    twice: bool,
    /// Earlier events replayed first: the events from this index on (modulo their count).
    replay_from: Option<u8>,
    /// The store is closed and reopened after the batch, and what it loads compared.
    reopen: bool,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
struct Id {
    key: u8,
    name: u8,
}

impl Id {
    fn key(self) -> u64 {
        match self.key % 8 {
            6 => 1 << 63,
            7 => u64::MAX,
            k => u64::from(k),
        }
    }

    fn name(self) -> String {
        NAMES[usize::from(self.name) % NAMES.len()].to_owned()
    }
}

#[derive(Arbitrary, Debug)]
enum Op {
    Add {
        id: Id,
        payload: Vec<u8>,
        deadline_ms: i64,
        period_ms: u64,
    },
    Reset {
        id: Id,
        deadline_ms: i64,
    },
    Delete(Id),
    /// A fire of the timer at `id` (of its current epoch, or of a stale one).
    Fire {
        id: Id,
        stale: bool,
        next_ms: Option<i64>,
    },
    /// The acknowledgement of one unacknowledged fire, or of a token never fired.
    Ack {
        pick: u8,
        unknown: bool,
    },
}

#[derive(Arbitrary, Debug)]
enum Damage {
    None,
    /// Cut to this fraction (in 65536ths) of its length.
    Truncate(u16),
    Header {
        field: u8,
        bytes: [u8; 16],
    },
    Overwrite {
        at: u32,
        bytes: Vec<u8>,
    },
    Garbage(Vec<u8>),
}

impl Damage {
    /// Whether an open that succeeds must still load the model's contents: every damage
    /// but bytes overwritten inside the data, which SQLite cannot tell from data.
    fn keeps_contents(&self) -> bool {
        !matches!(self, Damage::Overwrite { .. })
    }

    fn apply(&self, file: &mut Vec<u8>) {
        match self {
            Damage::None => {}
            Damage::Truncate(fraction) => {
                let len = file.len() * usize::from(*fraction) / 65_536;
                file.truncate(len);
            }
            Damage::Header { field, bytes } => {
                let (at, len) = HEADER_FIELDS[usize::from(*field) % HEADER_FIELDS.len()];
                if let Some(target) = file.get_mut(at..at + len) {
                    target.copy_from_slice(&bytes[..len]);
                }
            }
            Damage::Overwrite { at, bytes } => {
                let at = *at as usize % file.len().max(1);
                let end = (at + bytes.len()).min(file.len());
                file[at..end].copy_from_slice(&bytes[..end - at]);
            }
            Damage::Garbage(bytes) => *file = bytes.clone(),
        }
    }
}

/// The store under test, the events committed so far and the model they build.
struct Store {
    path: PathBuf,
    sink: Option<SqliteSink>,
    events: Vec<Event>,
    model: Snapshot,
}

impl Store {
    fn create(path: PathBuf) -> Store {
        let sink = SqliteSink::open(&path).expect("a new store opens");
        let mut store = Store {
            path,
            sink: Some(sink),
            events: Vec::new(),
            model: Snapshot::default(),
        };
        store.check_load();
        store
    }

    fn sink(&mut self) -> &mut SqliteSink {
        self.sink.as_mut().expect("the store is open")
    }

    fn run(&mut self, batch: &Batch) {
        if let Some(from) = batch.replay_from.filter(|_| !self.events.is_empty()) {
            let from = usize::from(from) % self.events.len();
            let again = self.events[from..].to_vec();
            self.sink().commit(&again).expect("a replay commits");
        }
        let mut events = Vec::new();
        for op in batch.changes.iter().take(MAX_CHANGES) {
            let event = self.event(op);
            assert!(self.model.apply(&event), "the model takes each new event");
            events.push(event);
        }
        self.events.extend(events.iter().cloned());
        self.sink().commit(&events).expect("a batch commits");
        if batch.twice {
            self.sink().commit(&events).expect("a batch commits twice");
        }
        if batch.reopen {
            self.sink = None;
            self.sink = Some(SqliteSink::open(&self.path).expect("a sound store reopens"));
        }
        self.check_load();
    }

    /// What the store loads is the model.
    fn check_load(&mut self) {
        let loaded = self.sink().load().expect("a sound store loads");
        assert_eq!(loaded, self.model, "the store's contents");
    }

    /// The next event of `op`, numbered after the last one.
    fn event(&self, op: &Op) -> Event {
        let change = match op {
            Op::Add {
                id,
                payload,
                deadline_ms,
                period_ms,
            } => Change::Add(StoredTimer {
                key: id.key(),
                name: id.name(),
                payload: payload.iter().copied().take(MAX_PAYLOAD).collect(),
                deadline_ms: *deadline_ms,
                period_ms: *period_ms,
                epoch: self.model.seq + 1,
            }),
            Op::Reset { id, deadline_ms } => Change::Reset {
                key: id.key(),
                name: id.name(),
                deadline_ms: *deadline_ms,
                epoch: self.model.seq + 1,
            },
            Op::Delete(id) => Change::Delete {
                key: id.key(),
                name: id.name(),
            },
            Op::Fire { id, stale, next_ms } => self.fire(*id, *stale, *next_ms),
            Op::Ack { pick, unknown } => Change::Ack(self.token(*pick, *unknown)),
        };
        Event {
            seq: self.model.seq + 1,
            change,
        }
    }

    fn fire(&self, id: Id, stale: bool, next_ms: Option<i64>) -> Change {
        let timer = self.model.timers.get(&(id.key(), id.name()));
        let (deadline_ms, epoch, payload) = timer.map_or((0, 0, Vec::new()), |t| {
            (t.deadline_ms, t.epoch, t.payload.clone())
        });
        let token = Token {
            key: id.key(),
            name: id.name(),
            occurrence_ms: deadline_ms,
            epoch: epoch + u64::from(stale),
        };
        Change::Fire {
            fire: StoredFire { token, payload },
            next_ms,
        }
    }

    fn token(&self, pick: u8, unknown: bool) -> Token {
        let fires = &self.model.fires;
        let known = (!unknown && !fires.is_empty())
            .then(|| fires.keys().nth(usize::from(pick) % fires.len()))
            .flatten();
        known.cloned().unwrap_or(Token {
            key: u64::from(pick),
            name: NAMES[usize::from(pick) % NAMES.len()].to_owned(),
            occurrence_ms: i64::from(pick),
            epoch: 1,
        })
    }

    /// Closes the store, damages its file, and opens it again.
    fn damage_and_reopen(mut self, damage: &Damage) {
        self.sink = None;
        let sound = std::fs::read(&self.path).expect("the store file reads");
        let mut damaged = sound.clone();
        damage.apply(&mut damaged);
        std::fs::write(&self.path, &damaged).expect("the damaged file writes");
        let first = open_and_load(&self.path, &damaged);
        // A file of no bytes is a store whose creation was cut short: made a new one.
        let expected = if damaged.is_empty() {
            Snapshot::default()
        } else {
            self.model
        };
        if damaged == sound || (first.is_some() && damage.keeps_contents()) {
            assert_eq!(
                first.as_ref(),
                Some(&expected),
                "an open after {damage:?} changed the contents"
            );
        }
        if let Some(first) = first {
            let now = std::fs::read(&self.path).expect("the store file reads");
            let again = open_and_load(&self.path, &now);
            assert_eq!(again, Some(first), "a second open of the damaged store");
        }
    }
}

/// Opens the store at `path` (whose file holds `bytes`) and loads it: the snapshot, or
/// `None` after a clear error that left the file as it was.
fn open_and_load(path: &Path, bytes: &[u8]) -> Option<Snapshot> {
    let shown = path.display().to_string();
    let loaded = match SqliteSink::open(path) {
        Ok(mut sink) => sink.load(),
        Err(message) => {
            assert!(
                message.contains(&shown),
                "an open error without the path: {message:?}"
            );
            Err(message)
        }
    };
    match loaded {
        Ok(snapshot) => Some(snapshot),
        Err(message) => {
            assert!(!message.is_empty(), "an empty error");
            let after = std::fs::read(path).expect("the store file still reads");
            assert!(
                after == bytes,
                "a refused open changed the file ({message})"
            );
            None
        }
    }
}

/// The directory of this thread's store files: on /dev/shm when there is one.
fn store_dir() -> PathBuf {
    let base = Path::new("/dev/shm");
    let base = if base.is_dir() {
        base.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let thread = format!("{:?}", std::thread::current().id());
    let thread: String = thread.chars().filter(char::is_ascii_digit).collect();
    base.join(format!(
        "timerwheel-durable-store-{}-{thread}",
        std::process::id()
    ))
}

/// Decodes `data` into a scenario and runs it; panics on any broken invariant.
pub fn run(data: &[u8]) {
    let Ok(scenario) = Scenario::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    let dir = store_dir();
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the store directory is made");
    let mut store = Store::create(dir.join("store.db"));
    for batch in scenario.batches.iter().take(MAX_BATCHES) {
        store.run(batch);
    }
    store.damage_and_reopen(&scenario.damage);
    let _ = std::fs::remove_dir_all(&dir);
}
