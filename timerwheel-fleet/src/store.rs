//! The timers in PostgreSQL: adds from any node, and the owner's fenced writes. Claiming
//! due timers, acknowledging fires and taking over a shard's unacknowledged fires each run
//! in one transaction that first [`fence`]s the shards they touch: a node whose lease moved
//! on writes nothing.

use std::collections::{BTreeSet, HashMap, HashSet};

use postgres::types::Type;
use postgres::GenericClient;
use timerwheel_core::durable::MissedPoints;

use crate::error::{FleetError, Result};
use crate::lease::{fence, fence_all, fence_lasting};
use crate::schema::check_schema;
use crate::shard::shard_of;
use crate::Key;

/// The channel on which an add or a reset tells the shard's owner "shard due_ms" (at commit),
/// so that a point behind the loaded edge of its window reaches its wheel at once.
pub const CHANNEL: &str = "tw_fleet";

/// The notification of the row `added` (shard, due_ms) on [`CHANNEL`].
const NOTIFY: &str = "SELECT pg_notify('tw_fleet', added.shard::text || ' ' || added.due_ms::text)";

/// A durable timer to add: named by (key, name), the name being its handler's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewTimer<'a> {
    /// The application's key (a session id); its hash picks the shard.
    pub key: Key,
    /// The handler's name.
    pub name: &'a str,
    /// The bytes the handler is given.
    pub payload: &'a [u8],
    /// The first deadline, ms since the Unix epoch (wall clock).
    pub due_ms: i64,
    /// The period in ms at a fixed rate; 0 for a one-shot.
    pub period_ms: i64,
    /// Replaces a timer of the same (key, name); without it such an add is refused.
    pub replace: bool,
}

/// Names one fire: the timer's (key, name), the occurrence (its scheduled deadline), the
/// timer's version (incarnation), and the shard with the epoch it was delivered under.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FleetToken {
    /// The timer's key.
    pub key: Key,
    /// The timer's name.
    pub name: String,
    /// The scheduled deadline of this fire, ms since the Unix epoch.
    pub occurrence_ms: i64,
    /// The timer's incarnation.
    pub version: i64,
    /// The shard of the key.
    pub shard: i32,
    /// The shard's epoch when the fire was delivered: an ack under an older one is refused.
    pub shard_epoch: i64,
}

/// A fire to deliver: its token and the timer's payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fire {
    /// Its token.
    pub token: FleetToken,
    /// The payload.
    pub payload: Vec<u8>,
    /// A periodic timer's next point, as the claim of this fire moved it (for the owner's
    /// wheel); `None` for a one-shot and for a fire delivered again.
    pub next_ms: Option<i64>,
}

/// Adds a timer (from any node) for a schema of `shards` shards; returns its version. An
/// existing (key, name) is an error unless `timer.replace`; a schema whose shard count is
/// no longer `shards` (a migration ran) refuses it ([`FleetError::ShardCount`]).
pub fn add_timer(
    client: &mut impl GenericClient,
    shards: i32,
    timer: &NewTimer<'_>,
) -> Result<i64> {
    let mut outcomes = add_timers(client, shards, std::slice::from_ref(timer))?;
    outcomes.remove(0)
}

/// Adds `timers` (from any node) for a schema of `shards` shards, in one statement (one
/// round trip) per run of them: the outcome of each, in their order, is what
/// [`add_timer`] of each in turn would return: its version, [`FleetError::Exists`], or
/// [`FleetError::ShardCount`]. A run ends where the `replace` flag changes or a (key,
/// name) comes again. A timer that could never be written ([`FleetError::Invalid`])
/// refuses the whole batch before anything is written; an error of the database ends it
/// (the runs before it may be written unless the caller's transaction is rolled back).
pub fn add_timers(
    client: &mut impl GenericClient,
    shards: i32,
    timers: &[NewTimer<'_>],
) -> Result<Vec<Result<i64>>> {
    for timer in timers {
        check_timer(timer.key, timer.name, timer.period_ms)?;
    }
    let mut outcomes = Vec::with_capacity(timers.len());
    let mut rest = timers;
    while !rest.is_empty() {
        let (run, after) = rest.split_at(run_length(rest));
        outcomes.extend(add_run(client, shards, run)?);
        rest = after;
    }
    Ok(outcomes)
}

/// How many of `timers`, from the first, one statement can add as [`add_timer`] of each in
/// turn would: the same `replace` flag, and no (key, name) twice.
fn run_length(timers: &[NewTimer<'_>]) -> usize {
    let mut seen = HashSet::new();
    timers
        .iter()
        .take_while(|t| t.replace == timers[0].replace && seen.insert((t.key, t.name)))
        .count()
}

/// Adds a run of timers of distinct (key, name) and one `replace` flag in one statement.
fn add_run(
    client: &mut impl GenericClient,
    shards: i32,
    run: &[NewTimer<'_>],
) -> Result<Vec<Result<i64>>> {
    let on_conflict = if run[0].replace {
        "ON CONFLICT (key, name) DO UPDATE SET due_ms = EXCLUDED.due_ms,
             period_ms = EXCLUDED.period_ms, payload = EXCLUDED.payload,
             version = EXCLUDED.version"
    } else {
        "ON CONFLICT (key, name) DO NOTHING"
    };
    let shard_ids: Vec<i32> = run.iter().map(|t| shard_of(t.key, shards)).collect();
    let keys: Vec<i64> = run.iter().map(|t| t.key as i64).collect();
    let names: Vec<&str> = run.iter().map(|t| t.name).collect();
    let dues: Vec<i64> = run.iter().map(|t| t.due_ms).collect();
    let periods: Vec<i64> = run.iter().map(|t| t.period_ms).collect();
    let payloads: Vec<&[u8]> = run.iter().map(|t| t.payload).collect();
    // Reading the count takes the table's lock before the statement's snapshot: a
    // migration (which locks it ACCESS EXCLUSIVE) waits for this add's transaction and
    // re-homes its rows, or this add waits for the migration and, the count having moved,
    // writes nothing.
    let rows = client.query_typed(
        &format!(
            "WITH added AS (
                 INSERT INTO tw_fleet_timers
                     (shard, key, name, due_ms, period_ms, payload, version)
                 SELECT t.shard, t.key, t.name, t.due_ms, t.period_ms, t.payload,
                        nextval('tw_fleet_version')
                 FROM tw_fleet_meta m,
                      unnest($1::int[], $2::bigint[], $3::text[], $4::bigint[],
                             $5::bigint[], $6::bytea[])
                          AS t(shard, key, name, due_ms, period_ms, payload)
                 WHERE m.shards = $7
                 {on_conflict}
                 RETURNING shard, key, name, due_ms, version)
             SELECT added.key, added.name, added.version
             FROM added, LATERAL ({NOTIFY}) AS n"
        ),
        &[
            (&shard_ids, Type::INT4_ARRAY),
            (&keys, Type::INT8_ARRAY),
            (&names, Type::TEXT_ARRAY),
            (&dues, Type::INT8_ARRAY),
            (&periods, Type::INT8_ARRAY),
            (&payloads, Type::BYTEA_ARRAY),
            (&shards, Type::INT4),
        ],
    )?;
    let added: HashMap<(i64, String), i64> = rows
        .iter()
        .map(|r| ((r.get(0), r.get(1)), r.get(2)))
        .collect();
    let found = if added.len() < run.len() {
        check_schema(client)?
    } else {
        shards
    };
    Ok(run
        .iter()
        .map(|t| match added.get(&(t.key as i64, t.name.to_owned())) {
            Some(version) => Ok(*version),
            None if found != shards => Err(FleetError::ShardCount {
                expected: shards,
                found,
            }),
            None => Err(FleetError::Exists {
                key: t.key,
                name: t.name.to_owned(),
            }),
        })
        .collect())
}

/// Refuses a timer with an empty name or a negative period (before anything is written).
pub(crate) fn check_timer(key: Key, name: &str, period_ms: i64) -> Result<()> {
    if period_ms < 0 || name.is_empty() {
        return Err(FleetError::Invalid(format!(
            "timer ({key}, {name:?}) with period {period_ms}"
        )));
    }
    Ok(())
}

/// Moves the next deadline of the timer (key, name) to `due_ms` (from any node); `false` if
/// there is no such timer. Its owner's wheel learns of it as an add from elsewhere does.
pub fn reset_timer(
    client: &mut impl GenericClient,
    key: Key,
    name: &str,
    due_ms: i64,
) -> Result<bool> {
    let changed = client.query(
        &format!(
            "WITH added AS (
                 UPDATE tw_fleet_timers SET due_ms = $3 WHERE key = $1 AND name = $2
                 RETURNING shard, due_ms)
             SELECT 1 FROM added, LATERAL ({NOTIFY}) AS n"
        ),
        &[&(key as i64), &name, &due_ms],
    )?;
    Ok(changed.len() == 1)
}

/// Removes the timer (key, name) (from any node): no further fire; `false` if there is no
/// such timer. A fire already claimed is still delivered (it is in the owner's hands).
pub fn delete_timer(client: &mut impl GenericClient, key: Key, name: &str) -> Result<bool> {
    let deleted = client.execute(
        "DELETE FROM tw_fleet_timers WHERE key = $1 AND name = $2",
        &[&(key as i64), &name],
    )?;
    Ok(deleted == 1)
}

/// What a claim takes: up to `limit` timers due at or before `now_ms + lead_ms` (its
/// [`cutoff`](Self::cutoff)), and what becomes of the points a periodic timer missed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claim {
    pub now_ms: i64,
    /// How far ahead it claims: the fence then requires every lease to last that much
    /// more, so that a fire claimed ahead is due while the lease is still live.
    pub lead_ms: i64,
    pub limit: i64,
    /// [`MissedPoints::Each`]: a periodic timer moves on by its period, and a point still
    /// due is claimed again, so no point is skipped. [`MissedPoints::Coalesce`]: one fire
    /// for the latest point that passed, and the schedule goes on from there.
    pub missed: MissedPoints,
}

impl Claim {
    /// Up to `limit` timers due at `now_ms`, none ahead, every missed point delivered.
    pub fn each(now_ms: i64, limit: i64) -> Self {
        Claim {
            now_ms,
            lead_ms: 0,
            limit,
            missed: MissedPoints::Each,
        }
    }

    /// The latest due time it claims.
    pub fn cutoff(&self) -> i64 {
        self.now_ms.saturating_add(self.lead_ms)
    }
}

/// Claims up to `limit` timers of `held` shards due at `now_ms`, in one fenced
/// transaction: each becomes an unacknowledged fire under its shard's epoch; a one-shot
/// ends, a periodic one moves on by its period (a point still due is claimed again, so no
/// point is skipped). Rows another transaction holds are skipped (`SKIP LOCKED`).
pub fn claim_due(
    client: &mut impl GenericClient,
    owner: &str,
    held: &[(i32, i64)],
    now_ms: i64,
    limit: i64,
) -> Result<Vec<Fire>> {
    let claim = Claim::each(now_ms, limit);
    ack_and_claim(client, owner, held, &[], claim).map(|(_, fires)| fires)
}

/// Acknowledges `acks` and makes `claim` as [`claim_due`] does, in one fenced transaction (one fence
/// for both): how many were acknowledged, and the fires claimed (due up to the claim's
/// cutoff, earliest first). Each of `acks` must be under a lease of `held`
/// ([`FleetError::Invalid`] otherwise, before anything is written); when a lease moved on
/// or ends within the claim's lead, neither is done ([`FleetError::Fenced`]).
pub fn ack_and_claim(
    client: &mut impl GenericClient,
    owner: &str,
    held: &[(i32, i64)],
    acks: &[FleetToken],
    claim: Claim,
) -> Result<(u64, Vec<Fire>)> {
    if let Some(stray) = acks
        .iter()
        .find(|t| !held.contains(&(t.shard, t.shard_epoch)))
    {
        return Err(FleetError::Invalid(format!(
            "an ack of shard {} under epoch {}, a lease not claimed under",
            stray.shard, stray.shard_epoch
        )));
    }
    let mut tx = client.transaction()?;
    fence_lasting(&mut tx, owner, held, claim.lead_ms)?;
    let acked = delete_fires(&mut tx, acks)?;
    let shards: Vec<i32> = held.iter().map(|(s, _)| *s).collect();
    let epochs: Vec<i64> = held.iter().map(|(_, e)| *e).collect();
    let rows = tx.query_typed(
        // `occurrence`: the point fired, the due time itself, or with $5 (coalesce) the
        // latest point of a periodic timer at or before the cutoff $3.
        "WITH due AS (
             SELECT t.shard, t.key, t.name, t.period_ms, t.payload, t.version,
                    CASE WHEN $5 AND t.period_ms > 0
                         THEN t.due_ms + ($3 - t.due_ms) / t.period_ms * t.period_ms
                         ELSE t.due_ms END AS occurrence
             FROM tw_fleet_timers t
             WHERE t.shard = ANY($1) AND t.due_ms <= $3
             ORDER BY t.due_ms LIMIT $4 FOR UPDATE SKIP LOCKED),
         fired AS (
             INSERT INTO tw_fleet_fires
                 (shard, key, name, occurrence_ms, version, shard_epoch, payload)
             SELECT d.shard, d.key, d.name, d.occurrence, d.version, h.epoch, d.payload
             FROM due d JOIN unnest($1::int[], $2::bigint[]) AS h(shard, epoch)
                  ON d.shard = h.shard
             ON CONFLICT DO NOTHING),
         ended AS (
             DELETE FROM tw_fleet_timers t USING due d
             WHERE d.period_ms = 0 AND t.key = d.key AND t.name = d.name),
         moved AS (
             UPDATE tw_fleet_timers t SET due_ms = d.occurrence + d.period_ms FROM due d
             WHERE d.period_ms > 0 AND t.key = d.key AND t.name = d.name)
         SELECT d.key, d.name, d.occurrence, d.version, d.shard, h.epoch, d.payload,
                CASE WHEN d.period_ms > 0 THEN d.occurrence + d.period_ms END
         FROM due d JOIN unnest($1::int[], $2::bigint[]) AS h(shard, epoch)
              ON d.shard = h.shard
         ORDER BY d.occurrence",
        &[
            (&shards, Type::INT4_ARRAY),
            (&epochs, Type::INT8_ARRAY),
            (&claim.cutoff(), Type::INT8),
            (&claim.limit, Type::INT8),
            (&(claim.missed == MissedPoints::Coalesce), Type::BOOL),
        ],
    )?;
    let fires = rows.iter().map(fire_of_row).collect();
    tx.commit()?;
    Ok((acked, fires))
}

/// A stored timer as a node loads it into its wheel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WindowTimer {
    /// The application's key.
    pub key: Key,
    /// The handler's name.
    pub name: String,
    /// The next deadline, ms since the Unix epoch.
    pub due_ms: i64,
    /// The period in ms; 0 for a one-shot.
    pub period_ms: i64,
    /// The incarnation.
    pub version: i64,
    /// The shard of the key.
    pub shard: i32,
}

/// The near window: the timers of `held` shards due before `until_ms`, earliest first, at
/// most `limit`, read under the fence (a node that lost a shard loads nothing of it).
pub fn load_window(
    client: &mut impl GenericClient,
    owner: &str,
    held: &[(i32, i64)],
    until_ms: i64,
    limit: i64,
) -> Result<Vec<WindowTimer>> {
    let mut tx = client.transaction()?;
    fence_all(&mut tx, owner, held)?;
    let shards: Vec<i32> = held.iter().map(|(s, _)| *s).collect();
    let rows = tx.query(
        "SELECT key, name, due_ms, period_ms, version, shard FROM tw_fleet_timers
         WHERE shard = ANY($1) AND due_ms < $2 ORDER BY due_ms LIMIT $3",
        &[&shards, &until_ms, &limit],
    )?;
    tx.commit()?;
    Ok(rows
        .iter()
        .map(|r| WindowTimer {
            key: r.get::<_, i64>(0) as Key,
            name: r.get(1),
            due_ms: r.get(2),
            period_ms: r.get(3),
            version: r.get(4),
            shard: r.get(5),
        })
        .collect())
}

/// The distinct due times of the timers of `held` shards in `[from_ms, until_ms)`,
/// earliest first, at most `limit`, read under the fence: what a node's wheel wakes up for.
/// A node keeps a wake-up per due millisecond, not per timer, so its memory is bounded by
/// the window's length whatever the number of timers in it.
pub fn due_points(
    client: &mut impl GenericClient,
    owner: &str,
    held: &[(i32, i64)],
    (from_ms, until_ms): (i64, i64),
    limit: i64,
) -> Result<Vec<i64>> {
    let mut tx = client.transaction()?;
    fence_all(&mut tx, owner, held)?;
    let shards: Vec<i32> = held.iter().map(|(s, _)| *s).collect();
    let rows = tx.query(
        "SELECT DISTINCT due_ms FROM tw_fleet_timers
         WHERE shard = ANY($1) AND due_ms >= $2 AND due_ms < $3 ORDER BY due_ms LIMIT $4",
        &[&shards, &from_ms, &until_ms, &limit],
    )?;
    tx.commit()?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// Acknowledges `tokens` (their effects are done): all of them, or none when the lease of
/// one of their shards moved past the token's epoch ([`FleetError::Fenced`]).
pub fn ack(client: &mut impl GenericClient, owner: &str, tokens: &[FleetToken]) -> Result<u64> {
    let mut tx = client.transaction()?;
    let fences: BTreeSet<(i32, i64)> = tokens.iter().map(|t| (t.shard, t.shard_epoch)).collect();
    fence_all(&mut tx, owner, &fences.into_iter().collect::<Vec<_>>())?;
    let acked = delete_fires(&mut tx, tokens)?;
    tx.commit()?;
    Ok(acked)
}

/// Deletes the fire records of `tokens` (in a transaction that fenced their leases).
fn delete_fires(tx: &mut impl GenericClient, tokens: &[FleetToken]) -> Result<u64> {
    if tokens.is_empty() {
        return Ok(0);
    }
    let keys: Vec<i64> = tokens.iter().map(|t| t.key as i64).collect();
    let names: Vec<&str> = tokens.iter().map(|t| t.name.as_str()).collect();
    let occurrences: Vec<i64> = tokens.iter().map(|t| t.occurrence_ms).collect();
    let epochs: Vec<i64> = tokens.iter().map(|t| t.shard_epoch).collect();
    Ok(tx.execute_typed(
        "DELETE FROM tw_fleet_fires f
         USING unnest($1::bigint[], $2::text[], $3::bigint[], $4::bigint[])
               AS a(key, name, occurrence_ms, shard_epoch)
         WHERE f.key = a.key AND f.name = a.name AND f.occurrence_ms = a.occurrence_ms
           AND f.shard_epoch = a.shard_epoch",
        &[
            (&keys, Type::INT8_ARRAY),
            (&names, Type::TEXT_ARRAY),
            (&occurrences, Type::INT8_ARRAY),
            (&epochs, Type::INT8_ARRAY),
        ],
    )?)
}

/// Takes over the unacknowledged fires of a shard just acquired under `epoch`: they are
/// delivered again with the same (key, name, occurrence, version) and the new epoch, and
/// an ack under the old epoch is refused from then on.
pub fn take_over_fires(
    client: &mut impl GenericClient,
    owner: &str,
    shard: i32,
    epoch: i64,
) -> Result<Vec<Fire>> {
    let mut tx = client.transaction()?;
    fence(&mut tx, owner, shard, epoch)?;
    let rows = tx.query(
        "UPDATE tw_fleet_fires SET shard_epoch = $2
         WHERE shard = $1 AND shard_epoch < $2
         RETURNING key, name, occurrence_ms, version, shard, shard_epoch, payload",
        &[&shard, &epoch],
    )?;
    let fires = rows.iter().map(fire_of_row).collect();
    tx.commit()?;
    Ok(fires)
}

/// Every unacknowledged fire of `held` shards, now under their current epochs: what a node
/// delivers again when it cannot tell whether a claim, an ack or a take-over of its own
/// committed (its connection broke in the middle).
pub fn unacked_fires(
    client: &mut impl GenericClient,
    owner: &str,
    held: &[(i32, i64)],
) -> Result<Vec<Fire>> {
    let mut tx = client.transaction()?;
    fence_all(&mut tx, owner, held)?;
    let (shards, epochs): (Vec<i32>, Vec<i64>) = held.iter().copied().unzip();
    let rows = tx.query(
        "UPDATE tw_fleet_fires f SET shard_epoch = h.epoch
         FROM unnest($1::int[], $2::bigint[]) AS h(shard, epoch)
         WHERE f.shard = h.shard AND f.shard_epoch <= h.epoch
         RETURNING f.key, f.name, f.occurrence_ms, f.version, f.shard, f.shard_epoch,
                   f.payload",
        &[&shards, &epochs],
    )?;
    tx.commit()?;
    Ok(rows.iter().map(fire_of_row).collect())
}

fn fire_of_row(row: &postgres::Row) -> Fire {
    Fire {
        token: FleetToken {
            key: row.get::<_, i64>(0) as Key,
            name: row.get(1),
            occurrence_ms: row.get(2),
            version: row.get(3),
            shard: row.get(4),
            shard_epoch: row.get(5),
        },
        payload: row.get(6),
        next_ms: if row.len() > 7 { row.get(7) } else { None },
    }
}
