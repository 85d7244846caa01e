//! The embedded store: one SQLite file in WAL mode, `synchronous=FULL`, held exclusively by
//! one opener. It keeps the snapshot itself: each batch is applied to the tables in one
//! transaction that also records the batch's last sequence number.
//!
//! Opening checks before it writes: a file that is not a timerwheel store, a damaged one,
//! another schema version or a path that cannot be written is refused and left untouched.

use std::collections::{HashMap, HashSet};
use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::Duration;

use rusqlite::{params, CachedStatement, Connection, DatabaseName, OpenFlags, Transaction};

use super::event::{Change, Event, Snapshot, StoredFire, StoredTimer, Token};
use super::sink::Sink;

/// Marks a SQLite file as a timerwheel store (`PRAGMA application_id`: "TWDT").
const APPLICATION_ID: i32 = 0x5457_4454;

/// One step of the migration hook: brings a store of version `i + 1` to `i + 2`.
type Migration = fn(&Transaction<'_>) -> rusqlite::Result<()>;

/// The migrations, in order.
const MIGRATIONS: &[Migration] = &[add_generations];

/// Version 2: the generation of epochs (version 1 handed out epochs from the sequence
/// numbers, all below those of generation 1).
fn add_generations(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch("ALTER TABLE meta ADD COLUMN generation INTEGER NOT NULL DEFAULT 0")
}

/// The schema version this library writes (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i32 = 1 + MIGRATIONS.len() as i32;

const SCHEMA: &str = "
    CREATE TABLE timers (key INTEGER NOT NULL, name TEXT NOT NULL, payload BLOB NOT NULL,
        deadline_ms INTEGER NOT NULL, period_ms INTEGER NOT NULL, epoch INTEGER NOT NULL,
        PRIMARY KEY (key, name)) WITHOUT ROWID;
    CREATE TABLE fires (key INTEGER NOT NULL, name TEXT NOT NULL,
        occurrence_ms INTEGER NOT NULL, epoch INTEGER NOT NULL, payload BLOB NOT NULL,
        PRIMARY KEY (key, name, occurrence_ms, epoch)) WITHOUT ROWID;
    CREATE TABLE meta (id INTEGER PRIMARY KEY CHECK (id = 0), seq INTEGER NOT NULL,
        generation INTEGER NOT NULL DEFAULT 0);
    INSERT INTO meta VALUES (0, 0, 0);";

/// How much of the file SQLite maps into memory for reading (a million timers take ~60 MB).
const MMAP_BYTES: i64 = 1 << 30;

/// The page cache, in KiB (SQLite's default is 2 MiB).
const CACHE_KIB: i64 = 64 << 10;

/// The WAL pages after which a commit checkpoints them into the file (SQLite's default is
/// 1,000 pages, which a busy store passed at nearly every commit).
const CHECKPOINT_PAGES: i64 = 16_384;

/// The SQLite store of durable timers.
pub struct SqliteSink {
    conn: Connection,
}

impl SqliteSink {
    /// Opens the store at `path`, creating it (mode 0600) if missing; an error message
    /// naming the path and the reason otherwise, the file untouched.
    pub fn open(path: &Path) -> Result<SqliteSink, String> {
        let shown = path.display();
        let created = create_if_missing(path).map_err(|e| format!("{shown}: {e}"))?;
        let bytes = std::fs::metadata(path)
            .map_err(|e| format!("{shown}: {e}"))?
            .len();
        // NO_MUTEX: a `Connection` is used by one thread at a time (it is not Sync), so
        // SQLite's own lock around every call (a fifth of a restore's instructions) is
        // not needed.
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags)
            .map_err(|e| format!("{shown}: cannot open: {e}"))?;
        // SQLite opens a file it may not write read-only, and fails later on an I/O error.
        if conn.is_readonly(DatabaseName::Main).unwrap_or(true) {
            return Err(format!("{shown}: read-only (a store must be writable)"));
        }
        // A store held by another opener is refused at once, not after a busy wait: the
        // holder keeps it until it closes (a caller that wants to wait tries again).
        conn.busy_timeout(Duration::ZERO)
            .map_err(|e| format!("{shown}: cannot open: {e}"))?;
        let mut sink = SqliteSink { conn };
        if let Err(e) = sink.prepare(created, bytes) {
            drop(sink);
            if created {
                // Only the empty file this call created: never a file of the user's.
                let _ = std::fs::remove_file(path);
            }
            return Err(format!("{shown}: {e}"));
        }
        Ok(sink)
    }

    /// Makes the file of `bytes` bytes (`created` by this open or not) a store in WAL mode.
    fn prepare(&mut self, created: bool, bytes: u64) -> Result<(), String> {
        let conn = &self.conn;
        conn.pragma_update(None, "locking_mode", "EXCLUSIVE")
            .map_err(sql)?;
        // A file left blank by a crash during its creation holds nothing: made anew.
        let created = created || is_blank(conn, bytes)?;
        if !created {
            check_existing(conn, bytes)?;
        }
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .map_err(writable)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(format!("cannot switch to WAL (journal mode {mode})"));
        }
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(sql)?;
        // Restore reads the whole file once: mapped, its pages are not copied into the cache.
        conn.pragma_update(None, "mmap_size", MMAP_BYTES)
            .map_err(sql)?;
        // A page changed since the last checkpoint is read from the WAL, not the map: a
        // cache that holds the changing pages spares those reads, and rarer checkpoints
        // write a page changed by many commits once.
        conn.pragma_update(None, "cache_size", -CACHE_KIB)
            .map_err(sql)?;
        conn.query_row(
            &format!("PRAGMA wal_autocheckpoint = {CHECKPOINT_PAGES}"),
            [],
            |row| row.get::<_, i64>(0),
        )
        .map_err(sql)?;
        // Takes the exclusive lock now and keeps it (locking_mode): one opener at a time.
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Exclusive);
        let tx = tx.map_err(writable)?;
        if created {
            tx.execute_batch(SCHEMA).map_err(writable)?;
            tx.pragma_update(None, "application_id", APPLICATION_ID)
                .map_err(writable)?;
            tx.pragma_update(None, "user_version", SCHEMA_VERSION)
                .map_err(writable)?;
        } else {
            migrate(&tx)?;
        }
        tx.commit().map_err(writable)
    }

    /// Applies `change`; a fire not `kept` does not insert its row in the fires table (its
    /// ack follows in the same batch).
    fn apply(statements: &mut Statements<'_>, change: &Change, kept: bool) -> rusqlite::Result<()> {
        match change {
            Change::Add(t) => {
                statements.get(Sql::Add)?.execute(params![
                    t.key as i64,
                    t.name,
                    t.payload,
                    t.deadline_ms,
                    t.period_ms as i64,
                    t.epoch as i64
                ])?;
            }
            Change::Reset {
                key,
                name,
                deadline_ms,
                epoch,
            } => {
                statements.get(Sql::Reset)?.execute(params![
                    *key as i64,
                    name,
                    deadline_ms,
                    *epoch as i64
                ])?;
            }
            Change::Delete { key, name } => {
                statements
                    .get(Sql::Delete)?
                    .execute(params![*key as i64, name])?;
            }
            Change::Fire { fire, next_ms } => Self::apply_fire(statements, fire, *next_ms, kept)?,
            Change::Generation(generation) => {
                statements
                    .get(Sql::Generation)?
                    .execute(params![*generation as i64])?;
            }
            Change::Ack(token) => {
                statements.get(Sql::Ack)?.execute(params![
                    token.key as i64,
                    token.name,
                    token.occurrence_ms,
                    token.epoch as i64
                ])?;
            }
        }
        Ok(())
    }

    /// A fire moves its timer on; `kept`: it waits for its acknowledgement in the fires
    /// table.
    fn apply_fire(
        statements: &mut Statements<'_>,
        fire: &StoredFire,
        next_ms: Option<i64>,
        kept: bool,
    ) -> rusqlite::Result<()> {
        let t = &fire.token;
        let (key, epoch) = (t.key as i64, t.epoch as i64);
        match next_ms {
            Some(next) => statements
                .get(Sql::FireNext)?
                .execute(params![key, t.name, epoch, next])?,
            None => statements
                .get(Sql::FireLast)?
                .execute(params![key, t.name, epoch])?,
        };
        if kept {
            statements.get(Sql::FireKept)?.execute(params![
                key,
                t.name,
                t.occurrence_ms,
                epoch,
                fire.payload
            ])?;
        }
        Ok(())
    }

    fn load_snapshot(&self) -> rusqlite::Result<Snapshot> {
        let (seq, generation) =
            self.conn
                .query_row("SELECT seq, generation FROM meta WHERE id = 0", [], |row| {
                    Ok((row.get::<_, i64>(0)? as u64, row.get::<_, i64>(1)? as u64))
                })?;
        let mut snapshot = Snapshot {
            seq,
            generation,
            ..Snapshot::default()
        };
        let mut timers = self
            .conn
            .prepare("SELECT key, name, payload, deadline_ms, period_ms, epoch FROM timers ORDER BY key, name")?;
        let rows = timers.query_map([], |row| {
            Ok(StoredTimer {
                key: row.get::<_, i64>(0)? as u64,
                name: row.get(1)?,
                payload: row.get(2)?,
                deadline_ms: row.get(3)?,
                period_ms: row.get::<_, i64>(4)? as u64,
                epoch: row.get::<_, i64>(5)? as u64,
            })
        })?;
        // One statement streamed in the primary key's order (SQLite walks the index, no
        // sort step), collected straight into the map.
        snapshot.timers = rows
            .map(|timer| timer.map(|t| ((t.key, t.name.clone()), t)))
            .collect::<rusqlite::Result<_>>()?;
        let mut fires = self.conn.prepare(
            "SELECT key, name, occurrence_ms, epoch, payload FROM fires
                 ORDER BY key, name, occurrence_ms, epoch",
        )?;
        let rows = fires.query_map([], |row| {
            Ok(StoredFire {
                token: Token {
                    key: row.get::<_, i64>(0)? as u64,
                    name: row.get(1)?,
                    occurrence_ms: row.get(2)?,
                    epoch: row.get::<_, i64>(3)? as u64,
                },
                payload: row.get(4)?,
            })
        })?;
        snapshot.fires = rows
            .map(|fire| fire.map(|f| (f.token.clone(), f)))
            .collect::<rusqlite::Result<_>>()?;
        Ok(snapshot)
    }

    fn seq(&self) -> rusqlite::Result<u64> {
        self.conn
            .prepare_cached("SELECT seq FROM meta WHERE id = 0")?
            .query_row([], |row| row.get::<_, i64>(0))
            .map(|seq| seq as u64)
    }
}

impl Sink for SqliteSink {
    fn load(&mut self) -> Result<Snapshot, String> {
        self.load_snapshot().map_err(sql)
    }

    fn commit(&mut self, events: &[Event]) -> Result<(), String> {
        let held = self.seq().map_err(sql)?;
        let fresh: Vec<&Event> = events.iter().filter(|e| e.seq > held).collect();
        let Some(last) = fresh.last().map(|e| e.seq) else {
            return Ok(());
        };
        let acked_next = fires_acked_next(&fresh);
        let tx = self.conn.transaction().map_err(sql)?;
        let mut statements = Statements::new(&tx);
        for event in fresh {
            let kept = !acked_next.contains(&event.seq);
            Self::apply(&mut statements, &event.change, kept).map_err(sql)?;
        }
        drop(statements);
        tx.prepare_cached("UPDATE meta SET seq = ?1 WHERE id = 0")
            .and_then(|mut update| update.execute(params![last as i64]))
            .map_err(sql)?;
        tx.commit().map_err(sql)
    }
}

/// The sequences of the fires in `events` whose token's next fire or ack there is its ack:
/// the ack deletes the row, so the fire need not insert it (a batch commits all of it or
/// none). Acks are always applied: a fire of the same token committed before leaves a row.
fn fires_acked_next(events: &[&Event]) -> HashSet<u64> {
    let mut pending: HashMap<&Token, u64> = HashMap::new();
    let mut skipped = HashSet::new();
    for event in events {
        match &event.change {
            Change::Fire { fire, .. } => {
                pending.insert(&fire.token, event.seq);
            }
            Change::Ack(token) => {
                if let Some(seq) = pending.remove(token) {
                    skipped.insert(seq);
                }
            }
            _ => {}
        }
    }
    skipped
}

/// The statements a batch applies, one per kind of change.
#[derive(Clone, Copy)]
enum Sql {
    Add,
    Reset,
    Delete,
    FireNext,
    FireLast,
    FireKept,
    Ack,
    Generation,
}

impl Sql {
    const ALL: usize = 8;

    fn text(self) -> &'static str {
        match self {
            Sql::Add => "INSERT OR REPLACE INTO timers VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            Sql::Reset => {
                "UPDATE timers SET deadline_ms = ?3, epoch = ?4 WHERE key = ?1 AND name = ?2"
            }
            Sql::Delete => "DELETE FROM timers WHERE key = ?1 AND name = ?2",
            Sql::FireNext => {
                "UPDATE timers SET deadline_ms = ?4 WHERE key = ?1 AND name = ?2 AND epoch = ?3"
            }
            Sql::FireLast => "DELETE FROM timers WHERE key = ?1 AND name = ?2 AND epoch = ?3",
            Sql::FireKept => "INSERT OR REPLACE INTO fires VALUES (?1, ?2, ?3, ?4, ?5)",
            Sql::Ack => {
                "DELETE FROM fires WHERE key = ?1 AND name = ?2 AND occurrence_ms = ?3
                 AND epoch = ?4"
            }
            Sql::Generation => "UPDATE meta SET generation = ?1 WHERE id = 0",
        }
    }
}

/// The statements of one batch, each taken from the connection's cache once and kept for
/// the batch: taking it for every event (hashing its text, putting it back) cost a sixth
/// of a commit's instructions.
struct Statements<'tx> {
    tx: &'tx Transaction<'tx>,
    held: [Option<CachedStatement<'tx>>; Sql::ALL],
}

impl<'tx> Statements<'tx> {
    fn new(tx: &'tx Transaction<'tx>) -> Self {
        Statements {
            tx,
            held: Default::default(),
        }
    }

    fn get(&mut self, sql: Sql) -> rusqlite::Result<&mut CachedStatement<'tx>> {
        let slot = &mut self.held[sql as usize];
        if slot.is_none() {
            *slot = Some(self.tx.prepare_cached(sql.text())?);
        }
        Ok(slot.as_mut().expect("prepared above"))
    }
}

/// Creates `path` readable by its owner only; `true` if it created it.
fn create_if_missing(path: &Path) -> std::io::Result<bool> {
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

/// Whether an existing file is blank: no bytes, or a database with no table and neither
/// mark (what a crash while a store was being created leaves), so that making it a store
/// loses nothing. Reads only; a file that is not a database is not blank, nor one of fewer
/// bytes than the least page (SQLite reads a file of one byte as an empty database).
fn is_blank(conn: &Connection, bytes: u64) -> Result<bool, String> {
    /// The least SQLite page: any database but one of no bytes is at least this long.
    const LEAST_PAGE: u64 = 512;
    if bytes == 0 {
        return Ok(true);
    }
    if bytes < LEAST_PAGE {
        return Ok(false);
    }
    let marks: (i32, i32, i64) = conn
        .query_row(
            "SELECT (SELECT application_id FROM pragma_application_id), \
                    (SELECT user_version FROM pragma_user_version), \
                    (SELECT count(*) FROM sqlite_master)",
            [],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .map_err(readable)?;
    Ok(marks == (0, 0, 0))
}

/// Reads (never writes) an existing file of `bytes` bytes: a timerwheel store, sound, of a
/// version this library reads.
fn check_existing(conn: &Connection, bytes: u64) -> Result<(), String> {
    let id: i32 = conn
        .pragma_query_value(None, "application_id", |row| row.get(0))
        .map_err(readable)?;
    let version: i32 = conn
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(readable)?;
    if id != APPLICATION_ID {
        return Err(format!(
            "not a timerwheel store (application_id {id:#x}, user_version {version})"
        ));
    }
    if !(1..=SCHEMA_VERSION).contains(&version) {
        return Err(format!(
            "schema version {version}, this library reads 1 to {SCHEMA_VERSION}"
        ));
    }
    // SQLite reads a cut last page as if its missing bytes were zeros, which `quick_check`
    // may not see (a row of the meta table read back as sequence 0); a store's file is
    // always whole pages.
    let page: i64 = conn
        .pragma_query_value(None, "page_size", |row| row.get(0))
        .map_err(readable)?;
    if bytes % page.max(1) as u64 != 0 {
        return Err(format!(
            "truncated: {bytes} bytes, not a whole number of {page}-byte pages"
        ));
    }
    let check: String = conn
        .query_row("PRAGMA quick_check(1)", [], |row| row.get(0))
        .map_err(readable)?;
    if check != "ok" {
        return Err(format!("damaged: {check}"));
    }
    Ok(())
}

/// Runs the migrations from the store's version to [`SCHEMA_VERSION`], in `tx`.
fn migrate(tx: &Transaction<'_>) -> Result<(), String> {
    let version: i32 = tx
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(sql)?;
    let from = usize::try_from(version - 1).unwrap_or(0);
    for step in MIGRATIONS.iter().skip(from) {
        step(tx).map_err(writable)?;
    }
    if version != SCHEMA_VERSION {
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(writable)?;
    }
    Ok(())
}

fn sql(e: rusqlite::Error) -> String {
    e.to_string()
}

fn readable(e: rusqlite::Error) -> String {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
            "locked by another opener (one process per store)".into()
        }
        _ => format!("not a sound SQLite store ({e})"),
    }
}

fn writable(e: rusqlite::Error) -> String {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
            "locked by another opener (one process per store)".into()
        }
        _ => format!("cannot write ({e})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store of version 1 (before generations), holding the timer (1, "charge") of epoch 5.
    fn version_1_store(path: &Path) {
        let conn = Connection::open(path).unwrap();
        conn.execute_batch(
            "CREATE TABLE timers (key INTEGER NOT NULL, name TEXT NOT NULL, payload BLOB NOT NULL,
                 deadline_ms INTEGER NOT NULL, period_ms INTEGER NOT NULL, epoch INTEGER NOT NULL,
                 PRIMARY KEY (key, name)) WITHOUT ROWID;
             CREATE TABLE fires (key INTEGER NOT NULL, name TEXT NOT NULL,
                 occurrence_ms INTEGER NOT NULL, epoch INTEGER NOT NULL, payload BLOB NOT NULL,
                 PRIMARY KEY (key, name, occurrence_ms, epoch)) WITHOUT ROWID;
             CREATE TABLE meta (id INTEGER PRIMARY KEY CHECK (id = 0), seq INTEGER NOT NULL);
             INSERT INTO meta VALUES (0, 5);
             INSERT INTO timers VALUES (1, 'charge', x'', 1000, 0, 5);",
        )
        .unwrap();
        conn.pragma_update(None, "application_id", APPLICATION_ID)
            .unwrap();
        conn.pragma_update(None, "user_version", 1).unwrap();
    }

    fn fire(occurrence_ms: i64, next_ms: i64) -> Change {
        let token = Token {
            key: 1,
            name: "charge".into(),
            occurrence_ms,
            epoch: 1,
        };
        let payload = vec![7];
        let fire = StoredFire { token, payload };
        Change::Fire {
            fire,
            next_ms: Some(next_ms),
        }
    }

    fn ack(occurrence_ms: i64) -> Change {
        let Change::Fire { fire, .. } = fire(occurrence_ms, 0) else {
            unreachable!()
        };
        Change::Ack(fire.token)
    }

    #[test]
    fn fires_and_acks_in_one_batch_or_across_batches_leave_what_the_model_leaves() {
        let dir = std::env::temp_dir().join(format!("tw-sqlite-fold-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("fold.db");
        let timer = StoredTimer {
            key: 1,
            name: "charge".into(),
            payload: vec![7],
            deadline_ms: 1000,
            period_ms: 1000,
            epoch: 1,
        };
        let batches = vec![
            // Acknowledged in their own batch, in the next one, twice, never.
            vec![
                Change::Add(timer),
                fire(1000, 2000),
                ack(1000),
                fire(2000, 3000),
            ],
            vec![fire(3000, 4000), ack(2000), fire(4000, 5000), ack(4000)],
            vec![ack(4000), fire(5000, 6000)],
            // An ack before its fire, a fire acked and fired again, a fire committed
            // before and fired and acked again.
            vec![ack(7000), fire(7000, 8000), fire(9000, 10000)],
            vec![fire(8000, 9000), ack(8000), fire(8000, 9000)],
            vec![fire(9000, 10000), ack(9000)],
        ];
        let mut model = Snapshot::default();
        let mut seq = 0;
        let mut sink = SqliteSink::open(&path).unwrap();
        for batch in batches {
            let events: Vec<Event> = batch
                .into_iter()
                .map(|change| {
                    seq += 1;
                    Event { seq, change }
                })
                .collect();
            for event in &events {
                model.apply(event);
            }
            sink.commit(&events).unwrap();
        }
        drop(sink);
        let stored = SqliteSink::open(&path).unwrap().load().unwrap();
        assert_eq!(stored, model);
        let left: Vec<i64> = stored.fires.keys().map(|t| t.occurrence_ms).collect();
        assert_eq!(left, [3000, 5000, 7000, 8000]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_version_1_store_is_migrated_and_keeps_its_timers_and_sequence() {
        let dir = std::env::temp_dir().join(format!("tw-sqlite-migrate-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("v1.db");
        version_1_store(&path);
        let mut sink = SqliteSink::open(&path).unwrap();
        let snapshot = sink.load().unwrap();
        assert_eq!((snapshot.seq, snapshot.generation), (5, 0));
        assert_eq!(snapshot.timers[&(1, "charge".to_owned())].epoch, 5);
        let version: i32 = sink
            .conn
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .unwrap();
        assert_eq!(version, SCHEMA_VERSION);
        // Generation 1's epochs are above every epoch version 1 handed out (its sequences).
        assert!(super::super::event::epoch_of(1, 1) > 5);
        drop(sink);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
