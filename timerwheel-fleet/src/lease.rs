//! Leases on shards, judged on the database's clock (`now()`), never on a node's.
//!
//! A [`Node`] calls [`Node::tick`] every [`Node::renew_interval`] (a fifth of the TTL):
//! in one transaction it marks itself alive, renews the leases it holds (by shard *and*
//! epoch, so a stale process of the same name renews nothing), hands back the shards above
//! its fair share (the shard count over the live nodes, rounded up) and takes free or
//! expired shards up to that share. Every acquisition increments the shard's epoch, even by
//! a node of the same name. A node that joins gets shards from the others at their next
//! tick (they release their excess), without waiting for a lease to expire; a node that
//! stops renewing loses its shards when its leases expire (TTL), and the others take them
//! at their next tick: at most TTL + one renew interval after its last renewal. A node
//! stopped in the middle of a transaction (SIGSTOP, a long pause) would keep its shard rows
//! locked: its session ends after the TTL idle in that transaction
//! (`idle_in_transaction_session_timeout`, on every connection of a node:
//! `ConnectOptions::with_idle_transaction_limit`), which releases them.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use postgres::types::Type;
use postgres::{Client, GenericClient};

use crate::error::{FleetError, Result};
use crate::schema::check_schema;

/// The lease time-to-live unless told otherwise.
pub const DEFAULT_TTL: Duration = Duration::from_secs(10);

/// The shortest lease TTL a node takes.
pub(crate) const MIN_TTL: Duration = Duration::from_millis(100);

/// What a tick changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rebalance {
    /// Shards taken, with their new epochs.
    pub acquired: Vec<(i32, i64)>,
    /// Shards handed back for another node (planned).
    pub released: Vec<i32>,
    /// Shards lost: the lease expired or another node took it.
    pub lost: Vec<i32>,
}

/// One member of the fleet: its name, its connection and the shards it holds.
pub struct Node {
    client: Client,
    name: String,
    ttl: Duration,
    shards: i32,
    held: BTreeMap<i32, i64>,
}

impl Node {
    /// Joins with `client` under `name` (holding nothing until the first tick); refuses a
    /// database without the schema.
    pub fn join(mut client: Client, name: &str, ttl: Duration) -> Result<Self> {
        if name.is_empty() {
            return Err(FleetError::Invalid("an empty node name".into()));
        }
        if ttl < MIN_TTL {
            return Err(FleetError::Invalid(format!("a lease TTL of {ttl:?}")));
        }
        let shards = prepare(&mut client, ttl)?;
        Ok(Self {
            client,
            name: name.to_owned(),
            ttl,
            shards,
            held: BTreeMap::new(),
        })
    }

    /// Goes on with a new connection after the old one broke (the server restarted, or
    /// ended the session): the shards held stay held until the next tick finds out which
    /// leases are still its own.
    pub fn reconnect(&mut self, mut client: Client) -> Result<()> {
        prepare(&mut client, self.ttl)?;
        self.client = client;
        Ok(())
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The shards it holds, with their epochs, as of its last tick.
    pub fn held(&self) -> &BTreeMap<i32, i64> {
        &self.held
    }

    /// The schema's shard count, as of its last tick.
    pub fn shard_count(&self) -> i32 {
        self.shards
    }

    /// How often to tick: a fifth of the TTL, well inside it.
    pub fn renew_interval(&self) -> Duration {
        self.ttl / 5
    }

    /// Its connection, for the fenced writes of [`crate::store`].
    pub fn client(&mut self) -> &mut Client {
        &mut self.client
    }

    /// Renews, rebalances and acquires (see the module's doc); on an error nothing it holds
    /// is assumed renewed: the caller stops firing once the TTL passes without a tick.
    pub fn tick(&mut self) -> Result<Rebalance> {
        let ttl_ms = self.ttl.as_millis() as i64;
        let mut tx = self.client.transaction()?;
        tx.execute(
            "INSERT INTO tw_fleet_nodes (name, alive_until)
             VALUES ($1, now() + $2::bigint * interval '1 ms')
             ON CONFLICT (name) DO UPDATE SET alive_until = EXCLUDED.alive_until",
            &[&self.name, &ttl_ms],
        )?;
        let renewed = renew(&mut tx, &self.name, &self.held, ttl_ms)?;
        let mut change = Rebalance {
            lost: self
                .held
                .keys()
                .filter(|s| !renewed.contains_key(s))
                .copied()
                .collect(),
            ..Rebalance::default()
        };
        let mut held = renewed;
        // The count moves only by an explicit migration (`set_shard_count`), which bumps
        // every epoch: the renewal above then found nothing and this takes the new shards.
        self.shards = check_schema(&mut tx)?;
        let share = fair_share(&mut tx, self.shards)?;
        if held.len() > share {
            let excess: Vec<(i32, i64)> = held
                .iter()
                .rev()
                .take(held.len() - share)
                .map(|(s, e)| (*s, *e))
                .collect();
            release(&mut tx, &self.name, &excess)?;
            for (shard, _) in &excess {
                held.remove(shard);
                change.released.push(*shard);
            }
        } else if held.len() < share {
            change.acquired = acquire(&mut tx, &self.name, share - held.len(), ttl_ms)?;
            held.extend(change.acquired.iter().copied());
        }
        tx.commit()?;
        self.held = held;
        Ok(change)
    }

    /// Leaves in a planned way: every shard handed back (free at once for the others) and
    /// the node no longer counted alive.
    pub fn leave(mut self) -> Result<()> {
        self.release_all()
    }

    /// [`Self::leave`] over a new connection from `connect` if its own broke (the server
    /// restarted since it was last used: the first statement finds out).
    pub fn leave_reconnecting(mut self, connect: impl FnOnce() -> Result<Client>) -> Result<()> {
        match self.release_all() {
            Err(_) if self.client.is_closed() => {
                self.reconnect(connect()?)?;
                self.release_all()
            }
            released => released,
        }
    }

    fn release_all(&mut self) -> Result<()> {
        let held: Vec<(i32, i64)> = self.held.iter().map(|(s, e)| (*s, *e)).collect();
        let mut tx = self.client.transaction()?;
        release(&mut tx, &self.name, &held)?;
        tx.execute("DELETE FROM tw_fleet_nodes WHERE name = $1", &[&self.name])?;
        tx.commit()?;
        Ok(())
    }
}

/// Refuses a write under (`shard`, `epoch`) unless `owner` still holds that lease: the
/// shard row is read `FOR SHARE` in the caller's transaction, so no other node can take the
/// shard before that transaction ends.
pub fn fence(tx: &mut impl GenericClient, owner: &str, shard: i32, epoch: i64) -> Result<()> {
    let row = tx.query_opt(
        "SELECT 1 FROM tw_fleet_shards
         WHERE shard = $1 AND epoch = $2 AND owner = $3 AND lease_until > now()
         FOR SHARE",
        &[&shard, &epoch, &owner],
    )?;
    row.map(|_| ()).ok_or(FleetError::Fenced { shard, epoch })
}

/// [`fence`] of many leases in one statement (one round trip however many shards a node
/// holds): refused, naming the first lease that moved, unless `owner` holds all of them.
pub fn fence_all(tx: &mut impl GenericClient, owner: &str, held: &[(i32, i64)]) -> Result<()> {
    fence_lasting(tx, owner, held, 0)
}

/// [`fence_all`] of leases that last `lead_ms` more at least (on the database's clock):
/// what a claim of fires due within `lead_ms` needs, so that each is delivered under a
/// live lease.
pub(crate) fn fence_lasting(
    tx: &mut impl GenericClient,
    owner: &str,
    held: &[(i32, i64)],
    lead_ms: i64,
) -> Result<()> {
    let (shards, epochs): (Vec<i32>, Vec<i64>) = held.iter().copied().unzip();
    let rows = tx.query_typed(
        "SELECT s.shard FROM tw_fleet_shards s
         JOIN unnest($1::int[], $2::bigint[]) AS h(shard, epoch)
           ON s.shard = h.shard AND s.epoch = h.epoch
         WHERE s.owner = $3 AND s.lease_until > now() + $4 * interval '1 millisecond'
         FOR SHARE OF s",
        &[
            (&shards, Type::INT4_ARRAY),
            (&epochs, Type::INT8_ARRAY),
            (&owner, Type::TEXT),
            (&lead_ms, Type::INT8),
        ],
    )?;
    let fenced: BTreeSet<i32> = rows.iter().map(|r| r.get(0)).collect();
    match held.iter().find(|(shard, _)| !fenced.contains(shard)) {
        Some(&(shard, epoch)) => Err(FleetError::Fenced { shard, epoch }),
        None => Ok(()),
    }
}

/// Checks the schema and sets the session up; returns the shard count.
fn prepare(client: &mut Client, ttl: Duration) -> Result<i32> {
    let shards = check_schema(client)?;
    // A node stopped inside a fenced transaction holds its shard rows locked: the server
    // ends such a session after the TTL, so that its shards can be taken.
    client.batch_execute(&format!(
        "SET idle_in_transaction_session_timeout = {}",
        ttl.as_millis()
    ))?;
    Ok(shards)
}

fn split(held: &BTreeMap<i32, i64>) -> (Vec<i32>, Vec<i64>) {
    held.iter().map(|(s, e)| (*s, *e)).unzip()
}

/// The leases of `held` still ours and unexpired, renewed.
fn renew(
    tx: &mut impl GenericClient,
    owner: &str,
    held: &BTreeMap<i32, i64>,
    ttl_ms: i64,
) -> Result<BTreeMap<i32, i64>> {
    let (shards, epochs) = split(held);
    let rows = tx.query(
        "UPDATE tw_fleet_shards s SET lease_until = now() + $4::bigint * interval '1 ms'
         FROM unnest($2::int[], $3::bigint[]) AS h(shard, epoch)
         WHERE s.shard = h.shard AND s.epoch = h.epoch AND s.owner = $1
           AND s.lease_until > now()
         RETURNING s.shard, s.epoch",
        &[&owner, &shards, &epochs, &ttl_ms],
    )?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}

/// The shard count over the live nodes, rounded up.
fn fair_share(tx: &mut impl GenericClient, shards: i32) -> Result<usize> {
    let live: i64 = tx
        .query_one(
            "SELECT count(*) FROM tw_fleet_nodes WHERE alive_until > now()",
            &[],
        )?
        .get(0);
    let live = live.max(1) as usize;
    Ok((shards as usize).div_ceil(live))
}

fn release(tx: &mut impl GenericClient, owner: &str, held: &[(i32, i64)]) -> Result<()> {
    let (shards, epochs): (Vec<i32>, Vec<i64>) = held.iter().copied().unzip();
    tx.execute(
        "UPDATE tw_fleet_shards s SET owner = NULL, lease_until = '-infinity'
         FROM unnest($2::int[], $3::bigint[]) AS h(shard, epoch)
         WHERE s.shard = h.shard AND s.epoch = h.epoch AND s.owner = $1",
        &[&owner, &shards, &epochs],
    )?;
    Ok(())
}

/// Takes up to `wanted` free or expired shards; each one's epoch grows by one.
fn acquire(
    tx: &mut impl GenericClient,
    owner: &str,
    wanted: usize,
    ttl_ms: i64,
) -> Result<Vec<(i32, i64)>> {
    let rows = tx.query(
        "UPDATE tw_fleet_shards SET owner = $1, epoch = epoch + 1,
                lease_until = now() + $3::bigint * interval '1 ms'
         WHERE shard IN (SELECT shard FROM tw_fleet_shards WHERE lease_until <= now()
                         ORDER BY shard LIMIT $2 FOR UPDATE SKIP LOCKED)
         RETURNING shard, epoch",
        &[&owner, &(wanted as i64), &ttl_ms],
    )?;
    let mut acquired: Vec<(i32, i64)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    acquired.sort_unstable();
    Ok(acquired)
}
