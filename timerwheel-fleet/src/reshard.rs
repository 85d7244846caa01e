//! The shard-count migration: an explicit call, never implicit. In one transaction, under a
//! fence that no node can pass while it runs, it re-homes every timer and unacknowledged
//! fire by the hash of its key among the new count and bumps every shard's epoch past all
//! the old ones, with every lease ended: each node's next tick finds its leases gone and
//! takes shards of the new count under new epochs (their take-over delivers the
//! unacknowledged fires again); a write under an old (shard, epoch) is refused.
//!
//! The fence: the shards table locked `EXCLUSIVE` (claims, acks and take-overs read shard
//! rows `FOR SHARE`, lease ticks update them), then the count's table `ACCESS EXCLUSIVE`
//! (every add reads it in its statement; the statement's snapshot is taken once the lock
//! is granted). All of them wait for the migration, and it waits for those under way (an
//! add's transaction included). An add made for the old count that waited is refused
//! ([`FleetError::ShardCount`]) and writes nothing.

use std::collections::BTreeSet;

use postgres::GenericClient;

use crate::error::{FleetError, Result};
use crate::schema::{check_count, check_schema, SCHEMA_LOCK};
use crate::shard::shard_of;
use crate::Key;

/// What a migration did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resharded {
    /// The count before.
    pub from: i32,
    /// The count now.
    pub to: i32,
    /// Every shard's epoch after it (above every epoch before it); the next acquisition of
    /// a shard gives it `epoch + 1`.
    pub epoch: i64,
    /// Timers and unacknowledged fires whose shard changed.
    pub moved: u64,
}

/// Changes the number of shards to `shards` (1 to 65536), re-homing every timer; a count
/// out of range, or the count it has, is refused and changes nothing. Runs while nodes run: they stop firing for its duration
/// and take the new shards at their next tick.
pub fn set_shard_count(client: &mut impl GenericClient, shards: i32) -> Result<Resharded> {
    check_count(shards)?;
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])?;
    let from = check_schema(&mut tx)?;
    if from == shards {
        return Err(FleetError::Invalid(format!(
            "the count is {shards} already"
        )));
    }
    // The shards first: a lease tick updates them before it reads the count.
    tx.batch_execute(
        "LOCK TABLE tw_fleet_shards IN EXCLUSIVE MODE;
         LOCK TABLE tw_fleet_meta IN ACCESS EXCLUSIVE MODE",
    )?;
    let epoch: i64 = tx
        .query_one("SELECT max(epoch) + 1 FROM tw_fleet_shards", &[])?
        .get(0);
    tx.execute("DELETE FROM tw_fleet_shards WHERE shard >= $1", &[&shards])?;
    tx.execute(
        "INSERT INTO tw_fleet_shards (shard) SELECT generate_series($1, $2 - 1)",
        &[&from, &shards],
    )?;
    tx.execute(
        "UPDATE tw_fleet_shards SET owner = NULL, lease_until = '-infinity', epoch = $1",
        &[&epoch],
    )?;
    let moved = rehome(&mut tx, shards)?;
    tx.execute("UPDATE tw_fleet_meta SET shards = $1", &[&shards])?;
    tx.commit()?;
    Ok(Resharded {
        from,
        to: shards,
        epoch,
        moved,
    })
}

/// Sets the shard of every timer and fire to its key's among `shards`; returns how many
/// rows moved.
fn rehome(tx: &mut impl GenericClient, shards: i32) -> Result<u64> {
    let keys: BTreeSet<i64> = tx
        .query(
            "SELECT key FROM tw_fleet_timers UNION SELECT key FROM tw_fleet_fires",
            &[],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let keys: Vec<i64> = keys.into_iter().collect();
    let homes: Vec<i32> = keys.iter().map(|k| shard_of(*k as Key, shards)).collect();
    let mut moved = 0;
    for table in ["tw_fleet_timers", "tw_fleet_fires"] {
        moved += tx.execute(
            &format!(
                "UPDATE {table} t SET shard = h.shard
                 FROM unnest($1::bigint[], $2::int[]) AS h(key, shard)
                 WHERE t.key = h.key AND t.shard <> h.shard"
            ),
            &[&keys, &homes],
        )?;
    }
    Ok(moved)
}
